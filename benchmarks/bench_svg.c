/* bench_svg.c - the SVG plot next to the report: full-cycle ns per body against N on
 * chains, every library. */
#include <math.h>
#include <stdio.h>

#include "bench_driver.h"

/* SVG plot: full-cycle ns per body against bodies on chainN, log-log, every library. */
void bench_write_svg(const char *path, const result *rs, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) bench_die("cannot write %s", path);
    const double W = 720, H = 460, L = 80, R = 170, T = 40, B = 60;
    double xmax = 1, ymin = 1e30, ymax = 0;
    for (int i = 0; i < n; ++i) {
        if (!rs[i].chain) continue;
        const bstat *st[3] = {&rs[i].mb[OP_FULL], &rs[i].sb[OP_FULL], rs[i].has_mj ? &rs[i].mj : NULL};
        if (rs[i].bodies > xmax) xmax = rs[i].bodies;
        for (int k = 0; k < 3; ++k)
            if (st[k] && st[k]->valid) {
                double y = st[k]->med * 1e3 / rs[i].bodies;
                if (y < ymin) ymin = y;
                if (y > ymax) ymax = y;
            }
    }
    if (ymax <= 0) ymin = 1, ymax = 10;
    double lx0 = 0, lx1 = ceil(log10(xmax) + 1e-9), ly0 = floor(log10(ymin)), ly1 = ceil(log10(ymax));
    if (lx1 <= lx0) lx1 = lx0 + 1;
    if (ly1 <= ly0) ly1 = ly0 + 1;
#define SX(x) (L + (log10(x) - lx0) / (lx1 - lx0) * (W - L - R))
#define SY(y) (H - B - (log10(y) - ly0) / (ly1 - ly0) * (H - T - B))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">Full cycle (set q, u; realize to Acceleration), chainN: ns per body (median)</text>\n", L);
    for (double e = lx0; e <= lx1 + 1e-9; e += 1) {
        double x = SX(pow(10, e));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, T, x, H - B);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, H - B + 18, pow(10, e));
    }
    for (double e = ly0; e <= ly1 + 1e-9; e += 1) {
        double y = SY(pow(10, e));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, W - R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4, pow(10, e));
    }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", L, T, W - L - R, H - T - B);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">bodies N (log)</text>\n", (L + W - R) / 2, H - 18);
    fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">ns per body (log)</text>\n", (T + H - B) / 2);
    if (150 > pow(10, ly0) && 150 < pow(10, ly1))
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">target 150</text>\n",
                SX(10), SY(150), SX(10000), SY(150), SX(10000) - 60, SY(150) - 5);
    const char *names[3] = {"mbk", "Simbody 3.7 (apt)", "MuJoCo 2.2.2 mj_forward"};
    const char *colors[3] = {"#d62728", "#1f77b4", "#2ca02c"};
    for (int k = 0; k < 3; ++k) {
        int any = 0;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[k]);
        for (int i = 0; i < n; ++i) {
            if (!rs[i].chain) continue;
            const bstat *st = k == 0 ? &rs[i].mb[OP_FULL] : k == 1 ? &rs[i].sb[OP_FULL] : rs[i].has_mj ? &rs[i].mj : NULL;
            if (!st || !st->valid) continue;
            fprintf(f, "%.1f,%.1f ", SX(rs[i].bodies), SY(st->med * 1e3 / rs[i].bodies));
            any = 1;
        }
        fprintf(f, "\"/>\n");
        for (int i = 0; i < n; ++i) {
            if (!rs[i].chain) continue;
            const bstat *st = k == 0 ? &rs[i].mb[OP_FULL] : k == 1 ? &rs[i].sb[OP_FULL] : rs[i].has_mj ? &rs[i].mj : NULL;
            if (!st || !st->valid) continue;
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s %s: %.0f ns/body</title></circle>\n",
                    SX(rs[i].bodies), SY(st->med * 1e3 / rs[i].bodies), colors[k], names[k], rs[i].name,
                    st->med * 1e3 / rs[i].bodies);
        }
        if (any) {
            double ly = T + 20 + 22 * k;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                    W - R + 10, ly, W - R + 30, ly, colors[k], W - R + 35, ly + 4, names[k]);
        }
    }
#undef SX
#undef SY
    fprintf(f, "</svg>\n");
    fclose(f);
}
