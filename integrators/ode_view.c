/* The plain ODE/DAE view for external integrators: the DAE residual and
 * the finite-difference Jacobian of ydot (mbk_system_calc_ydot and
 * mbk_system_project are in src/system.c). */
#include <float.h>
#include <math.h>

#include "mbk/integrator.h"
#include "mbk/status.h"

int mbk_system_calc_dae_residual(const mbk_system *sys, mbk_state *s, double t, const double *y,
                                 const double *yp, double *r)
{
    const char *fn = "mbk_system_calc_dae_residual";
    if (!yp || !r) return mbk_set_error(MBK_EINVAL, "%s: %s is NULL", fn, !yp ? "yp" : "r");
    int rc = mbk_system_realize(sys, s, MBK_STAGE_MODEL);
    if (rc < 0) return rc;
    int ny = mbk_state_get_ny(s), k = mbk_find_nonfinite(yp, ny);
    if (k >= 0)
        return mbk_set_error(MBK_ENOTFINITE, "%s: yp[%d] = %g is not finite; the State was not changed", fn, k,
                             yp[k]);
    /* r = yp - ydot(t, y); calc_ydot checks t and y and leaves the State as it was on failure */
    if ((rc = mbk_system_calc_ydot(sys, s, t, y, r)) < 0)
        return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    for (int i = 0; i < ny; ++i) r[i] = yp[i] - r[i];
    return MBK_OK;
}

/* Writable q (part 0), u (1) or z (2): each invalidates only from its own stage
   (Position, Velocity, Dynamics), so the stages below are kept. */
static double *upd_part(mbk_state *s, int part)
{
    return part == 0 ? mbk_state_upd_q(s) : part == 1 ? mbk_state_upd_u(s) : mbk_state_upd_z(s);
}

int mbk_system_calc_ydot_jacobian(const mbk_system *sys, mbk_state *s, double *J)
{
    const char *fn = "mbk_system_calc_ydot_jacobian";
    if (!J) return mbk_set_error(MBK_EINVAL, "%s: J is NULL", fn);
    int rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    if (rc < 0) return rc;
    const int ny = mbk_state_get_ny(s), nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    if (ny == 0) return MBK_OK;
    /* ydot at the base point goes into the last column while the others are computed */
    const double *yd = mbk_state_get_ydot(s);
    for (int i = 0; i < ny; ++i) J[i * ny + ny - 1] = yd[i];
    const double sq = sqrt(DBL_EPSILON);
    for (int j = 0; j < ny; ++j) {
        /* y[j] alone is perturbed, through the narrowest view: a u or z column realizes
           again only from Velocity or Dynamics (the Position stage is reused) */
        const int part = j < nq ? 0 : j < nq + nu ? 1 : 2;
        const int k = j - (part == 0 ? 0 : part == 1 ? nq : nq + nu);
        double yj = mbk_state_get_y(s)[j];
        double d = sq * fmax(fabs(yj), 1.0);
        volatile double yp = yj + d; /* the step actually taken, after rounding */
        d = yp - yj;
        double *v = upd_part(s, part);
        if (!v) return mbk_last_status();
        v[k] = yj + d;
        rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
        if (rc == MBK_OK) {
            const double *f = mbk_state_get_ydot(s);
            for (int i = 0; i < ny; ++i) J[i * ny + j] = (f[i] - J[i * ny + ny - 1]) / d;
        }
        v = upd_part(s, part);
        v[k] = yj;
        if (rc < 0) {
            mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
            return mbk_set_error(rc, "%s: perturbing y[%d] by %g: %s", fn, j, d, mbk_last_error());
        }
    }
    return mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
}
