/* The plain ODE/DAE view for external integrators: the DAE residual and
 * the Jacobian of ydot, analytic (from mbk/derivatives.h) or by finite
 * differences (mbk_system_calc_ydot and mbk_system_project are in
 * src/system.c). */
#include <float.h>
#include <math.h>

#include "mbk/derivatives.h"
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

/* One variable of y: q, u or z and its index there. Changing it through its own
   array invalidates only what depends on it (u: Velocity onward, z: Dynamics). */
static double *ydot_var(mbk_state *s, int j, int nq, int nu)
{
    double *v = j < nq ? mbk_state_upd_q(s) : j < nq + nu ? mbk_state_upd_u(s) : mbk_state_upd_z(s);
    return v ? v + (j < nq ? j : j < nq + nu ? j - nq : j - nq - nu) : NULL;
}

static double ydot_get(const mbk_state *s, int j, int nq, int nu)
{
    if (j < nq) return mbk_state_get_q(s)[j];
    if (j < nq + nu) return mbk_state_get_u(s)[j - nq];
    return mbk_state_get_z(s)[j - nq - nu];
}

int mbk_system_calc_ydot_jacobian_fd(const mbk_system *sys, mbk_state *s, double *J)
{
    const char *fn = "mbk_system_calc_ydot_jacobian_fd";
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
        double yj = ydot_get(s, j, nq, nu);
        double d = sq * fmax(fabs(yj), 1.0);
        volatile double yp = yj + d; /* the step actually taken, after rounding */
        d = yp - yj;
        double *y = ydot_var(s, j, nq, nu);
        if (!y) return mbk_last_status();
        *y = yj + d;
        rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
        if (rc == MBK_OK) {
            const double *f = mbk_state_get_ydot(s);
            for (int i = 0; i < ny; ++i) J[i * ny + j] = (f[i] - J[i * ny + ny - 1]) / d;
        }
        *ydot_var(s, j, nq, nu) = yj;
        if (rc < 0) {
            mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
            return mbk_set_error(rc, "%s: perturbing y[%d] by %g: %s", fn, j, d, mbk_last_error());
        }
    }
    return mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
}

/* Central differences of the rows [r0, r1) of ydot over the columns [c0, c1) of y,
   step cbrt(eps) max(1, |y_j|), into J; the State is realized again at its y. */
static int ydot_central(const mbk_system *sys, mbk_state *s, double *J, int r0, int r1, int c0, int c1,
                        const char *fn)
{
    const int ny = mbk_state_get_ny(s), nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s);
    const double cb = cbrt(DBL_EPSILON);
    for (int j = c0; j < c1; ++j) {
        double yj = ydot_get(s, j, nq, nu), d = cb * fmax(fabs(yj), 1.0);
        int rc = MBK_OK;
        for (int sg = 1; sg >= -1 && rc == MBK_OK; sg -= 2) {
            *ydot_var(s, j, nq, nu) = yj + sg * d;
            rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
            if (rc < 0) break;
            const double *f = mbk_state_get_ydot(s);
            for (int i = r0; i < r1; ++i) J[i * ny + j] = sg > 0 ? f[i] : (J[i * ny + j] - f[i]) / (2 * d);
        }
        *ydot_var(s, j, nq, nu) = yj;
        if (rc < 0) {
            mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
            return mbk_set_error(rc, "%s: perturbing y[%d] by %g: %s", fn, j, d, mbk_last_error());
        }
    }
    return mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
}

int mbk_system_calc_ydot_jacobian(const mbk_system *sys, mbk_state *s, double *J)
{
    const char *fn = "mbk_system_calc_ydot_jacobian";
    if (!J) return mbk_set_error(MBK_EINVAL, "%s: J is NULL", fn);
    int rc = mbk_system_realize(sys, s, MBK_STAGE_ACCELERATION);
    if (rc < 0) return rc;
    mbk_derivative_info info;
    if ((rc = mbk_system_get_derivative_info(sys, s, &info)) < 0) return rc;
    if (!info.multibody) return mbk_system_calc_ydot_jacobian_fd(sys, s, J);
    const int ny = mbk_state_get_ny(s), nq = mbk_state_get_nq(s), nu = mbk_state_get_nu(s), nz = ny - nq - nu;
    if (ny == 0) return MBK_OK;
    /* q rows: d(N u)/dq and N; u rows: the acceleration derivatives (each writes every
       entry of its blocks; the z rows and columns below write theirs) */
    const mbk_matter *m = mbk_multibody_get_matter(sys);
    if ((rc = mbk_matter_calc_qdot_derivatives(m, s, J, ny, J + nq, ny)) < 0 ||
        (rc = mbk_system_calc_acceleration_derivatives_ld(sys, s, J + nq * ny, ny, J + nq * ny + nq, ny)) < 0)
        return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    if (nz == 0) return MBK_OK;
    /* z: its columns (every row) and its rows (the q and u columns) numerically */
    if ((rc = ydot_central(sys, s, J, 0, ny, nq + nu, ny, fn)) < 0) return rc;
    return ydot_central(sys, s, J, nq + nu, ny, 0, nq + nu, fn);
}
