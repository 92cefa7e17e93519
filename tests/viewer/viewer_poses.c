/* Reference body poses for the viewer test (tests/viewer/test_viewer.py).
 *
 *   viewer_poses MODEL CSV ROW...
 *
 * Loads MODEL as the mbk program does (apps/app_models.c), reads the q of the
 * given data rows (0 = the first sample) of a trajectory CSV written by
 * `mbk run --output`, sets them in a State, realizes it to Position and prints
 * one line per row and body: "row body t x y z qw qx qy qz" (X_GB from
 * mbk_matter_get_body_transform). So the test compares the page's poses with
 * the trajectory file, through the library, independently of app_html.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: viewer_poses MODEL CSV ROW...\n");
        return 2;
    }
    app_model m;
    if (app_model_load(argv[1], NULL, &m) != APP_OK) return 3;
    mbk_state *s = app_model_initial_state(&m);
    FILE *f = fopen(argv[2], "r");
    if (!s || !f) {
        fprintf(stderr, "viewer_poses: cannot start (%s)\n", f ? "State" : argv[2]);
        return 1;
    }
    static char line[1 << 20];
    if (!fgets(line, sizeof line, f)) return 1;
    int nq = 0;
    for (char *p = strstr(line, ",q"); p; p = strstr(p + 1, ",q")) ++nq;
    if (nq != mbk_state_get_nq(s)) {
        fprintf(stderr, "viewer_poses: the CSV has %d q, the model %d\n", nq, mbk_state_get_nq(s));
        return 1;
    }
    const mbk_matter *mt = mbk_multibody_get_matter(m.sys);
    long row = 0;
    int next = 3;
    while (next < argc && fgets(line, sizeof line, f)) {
        long want = atol(argv[next]);
        if (row++ != want) continue;
        ++next;
        char *p = line;
        double t = strtod(p, &p);
        double *q = mbk_state_upd_q(s);
        for (int i = 0; i < nq; ++i) q[i] = strtod(p + 1, &p);
        if (mbk_state_set_time(s, t) < 0 || mbk_system_realize(m.sys, s, MBK_STAGE_POSITION) < 0) {
            fprintf(stderr, "viewer_poses: %s\n", mbk_last_error());
            return 1;
        }
        for (int b = 0; b < m.n_bodies; ++b) {
            mbk_transform X;
            mbk_matter_get_body_transform(mt, s, b, &X);
            mbk_quat qq = mbk_mat33_to_quat(X.R);
            printf("%ld %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", want, b, t, X.p.x, X.p.y, X.p.z, qq.w,
                   qq.x, qq.y, qq.z);
        }
    }
    fclose(f);
    mbk_state_destroy(s);
    app_model_free(&m);
    return next == argc ? 0 : 1;
}
