/* Lists of numbers on the command line, and the initial values --q0 and --u0 give,
 * for mbk run and mbk sweep alike. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

/* Items separated by sep, each a finite number, into out (the first cap of them).
   Returns the number of items (which may exceed cap), or -1 with *e naming the
   first item that is not a finite number. */
int app_parse_list(const char *text, char sep, double *out, int cap, app_list_error *e)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        const char *stop = strchr(p, sep);
        size_t len = stop ? (size_t)(stop - p) : strlen(p);
        char item[64];
        int ok = len > 0 && len < sizeof item;
        double v = NAN;
        if (ok) {
            memcpy(item, p, len);
            item[len] = '\0';
            char *end = NULL;
            errno = 0;
            v = strtod(item, &end);
            ok = end != item && *end == '\0';
            if (ok && (!isfinite(v) || (errno == ERANGE && fabs(v) > 1))) {
                e->index = n + 1, e->not_finite = true;
                snprintf(e->item, sizeof e->item, "%.*s", (int)len, p);
                return -1;
            }
        }
        if (!ok) {
            e->index = n + 1, e->not_finite = false;
            snprintf(e->item, sizeof e->item, "%.*s", (int)(len < 40 ? len : 40), p);
            return -1;
        }
        if (n < cap) out[n] = v;
        ++n;
        if (!stop) return n;
        p = stop + 1;
    }
}

/* Message for a list that app_parse_list refused: which value, and why. */
void app_list_message(char *buf, size_t cap, const app_list_error *e)
{
    if (e->not_finite)
        snprintf(buf, cap, "value %d ('%s') is not a finite number; every value must be finite", e->index, e->item);
    else if (!e->item[0])
        snprintf(buf, cap, "value %d is empty", e->index);
    else
        snprintf(buf, cap, "value %d ('%s') is not a number", e->index, e->item);
}

int app_parse_number(const char *opt, const char *text, double *out, char *why, size_t cap)
{
    char *end = NULL;
    errno = 0;
    const double v = text ? strtod(text, &end) : NAN;
    if (text && end != text && !*end && errno == ERANGE) {
        if (why) snprintf(why, cap, "%s: '%s' is out of range (its magnitude is beyond 1.8e308 or, not zero, below "
                          "2.2e-308)", opt, text);
        return -1;
    }
    if (!text || errno || end == text || *end || !isfinite(v)) {
        if (why) snprintf(why, cap, "%s needs a finite number, got '%s'", opt, text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

int app_parse_vec3(const char *opt, const char *text, mbk_vec3 *out, char *why, size_t cap)
{
    double g[3];
    app_list_error le;
    int k = text ? app_parse_list(text, ',', g, 3, &le) : 0;
    if (k < 0) {
        char item[160];
        app_list_message(item, sizeof item, &le);
        snprintf(why, cap, "%s: %s", opt, item);
        return -1;
    }
    if (k != 3) {
        snprintf(why, cap, "%s needs X,Y,Z (3 numbers), got '%s'", opt, text ? text : "");
        return -1;
    }
    *out = mbk_vec3_make(g[0], g[1], g[2]);
    return 0;
}

int app_check_integration(double t_final, double accuracy, double step, const char *integrator, char *why,
                          size_t cap)
{
    if (!(t_final > 0)) snprintf(why, cap, "--t-final must be > 0");
    else if (!(accuracy > 0 && accuracy < 1)) snprintf(why, cap, "--accuracy must be in (0, 1)");
    else if (step < 0 || step > t_final) snprintf(why, cap, "--step must be in (0, t-final]");
    else if (!app_integrator_known(integrator)) snprintf(why, cap, "unknown integrator '%s'", integrator);
    else if (step > 0 && !app_integrator_fixed_step_ok(integrator))
        snprintf(why, cap, "--step: %s chooses its own steps; a fixed step works with rkmerson, rk4, euler and "
                 "semi-euler", integrator);
    else return 0;
    return -1;
}

/* The first coordinate (is_q) or speed of the joint (or, for a joint without a name,
   the body) called name, and how many it has; -1 if there is none. */
static int joint_range(const app_model *m, const mbk_state *s, const char *name, bool is_q, int *n)
{
    int start = app_model_find_joint_q(m, s, name, n);
    if (start < 0 || is_q) return start;
    const mbk_matter *mt = mbk_multibody_get_matter(m->sys);
    int b = 1;
    while (b < m->n_bodies && strcmp(m->joint_name[b], name) && strcmp(m->body_name[b], name)) ++b;
    *n = mbk_matter_get_body_num_u(mt, s, b);
    return mbk_matter_get_body_u_start(mt, s, b);
}

/* All n values as a plain list. */
static int plain_values(const char *cmd, const char *what, const char *text, int n, bool is_q, app_assign *out,
                        int *nout)
{
    double *v = malloc(sizeof(double) * ((size_t)n + 1));
    if (!v) {
        fprintf(stderr, "mbk %s: out of memory\n", cmd);
        return APP_FAILED;
    }
    app_list_error le;
    int k = app_parse_list(text, ',', v, n, &le), status = APP_OK;
    if (k < 0) {
        char why[160];
        app_list_message(why, sizeof why, &le);
        fprintf(stderr, "mbk %s: %s: %s\n", cmd, what, why);
        status = APP_USAGE;
    } else if (k != n) {
        fprintf(stderr, "mbk %s: %s needs %d comma-separated numbers for this model (n%c = %d), got %d; or give "
                        "JOINT=V pairs\n", cmd, what, n, is_q ? 'q' : 'u', n, k);
        status = APP_USAGE;
    }
    for (int i = 0; status == APP_OK && i < n; ++i) out[(*nout)++] = (app_assign){i, v[i]};
    free(v);
    return status;
}

/* One JOINT=V[:V...] pair (item, modifiable). */
static int joint_values(const app_model *m, const mbk_state *s, const char *cmd, const char *what, char *item,
                        bool is_q, app_assign *out, int *nout)
{
    char *eq = strchr(item, '=');
    if (!eq) {
        fprintf(stderr, "mbk %s: %s: '%s' is not JOINT=VALUE\n", cmd, what, item);
        return APP_USAGE;
    }
    *eq = '\0';
    int nj = 0, start = joint_range(m, s, item, is_q, &nj);
    if (start < 0) {
        fprintf(stderr, "mbk %s: %s: the model has no joint named '%s' (mbk info lists them)\n", cmd, what, item);
        return APP_USAGE;
    }
    double v[8];
    app_list_error le;
    int k = app_parse_list(eq + 1, ':', v, 8, &le);
    if (k < 0) {
        char why[160];
        app_list_message(why, sizeof why, &le);
        fprintf(stderr, "mbk %s: %s: joint '%s': %s\n", cmd, what, item, why);
        return APP_USAGE;
    }
    if (k != nj) {
        fprintf(stderr, "mbk %s: %s: joint '%s' has %d %s; give %d number%s separated by ':'\n", cmd, what, item, nj,
                is_q ? "q" : "u", nj, nj == 1 ? "" : "s");
        return APP_USAGE;
    }
    for (int j = 0; j < k; ++j) out[(*nout)++] = (app_assign){start + j, v[j]};
    return APP_OK;
}

int app_parse_initial(const app_model *m, const mbk_state *s, const char *cmd, const char *text, bool is_q,
                      app_assign *out, int *nout)
{
    const char *what = is_q ? "--q0" : "--u0";
    const int n = is_q ? mbk_state_get_nq(s) : mbk_state_get_nu(s);
    *nout = 0;
    if (!strchr(text, '=')) return plain_values(cmd, what, text, n, is_q, out, nout);
    char *copy = malloc(strlen(text) + 1);
    if (!copy) {
        fprintf(stderr, "mbk %s: out of memory\n", cmd);
        return APP_FAILED;
    }
    strcpy(copy, text);
    int status = APP_OK;
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item && status == APP_OK;
         item = strtok_r(NULL, ",", &save))
        status = joint_values(m, s, cmd, what, item, is_q, out, nout);
    free(copy);
    return status;
}
