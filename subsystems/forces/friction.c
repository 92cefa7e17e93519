/* Mobility Coulomb friction: a constant friction force (or torque) opposing
 * one generalized speed, regularized over a small speed so that the force is
 * a smooth function of u (an ODE integrator can step through u = 0):
 *   tau = -F tanh(u / vt),   parameters (F >= 0, vt > 0).
 * Well above vt the force is F against the motion; below it, a stiff viscous
 * damper of coefficient F / vt. The element dissipates F u tanh(u / vt) >= 0
 * watts and keeps the energy dissipated so far in its own z variable
 * (mbk_force_get_dissipated_energy), so that E(t) + dissipated = E(0) can be
 * checked. */
#include <math.h>

#include "mbk/status.h"
#include "forces_impl.h"
#include "../matter/matter_impl.h"

static double friction_u(const fe_elem *e, const mbk_force_ctx *c, const mbk_state *s)
{
    return mbk_state_get_subsystem_u(s, mbk_force_ctx_get_matter(c)->sub)[fe_mobility_u(e, c)];
}

static int friction_force(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                          mbk_spatial_vec *F, double *tau)
{
    (void)F;
    tau[fe_mobility_u(e, c)] -= p[0] * tanh(friction_u(e, c, s) / p[1]);
    return 0;
}

static double friction_dissipation(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s)
{
    double u = friction_u(e, c, s);
    return p[0] * u * tanh(u / p[1]);
}

static int check_friction(const double *p)
{
    if (!(p[0] >= 0) || !(p[1] > 0))
        return mbk_set_error(MBK_EINVAL, "mobility Coulomb friction: friction %g must be >= 0 and transition "
                                         "velocity %g > 0", p[0], p[1]);
    return MBK_OK;
}

const fe_kind fe_mob_friction = {"mobility Coulomb friction", 2, check_friction, friction_force, NULL,
                                 "mbk_force_add_mobility_coulomb_friction",
                                 friction_dissipation};

int mbk_force_add_mobility_coulomb_friction(mbk_forces *f, int body, int u_index, double friction,
                                            double transition_velocity)
{
    fe_elem w = {0};
    const double p[2] = {friction, transition_velocity};
    int rc = fe_mobility_where(f, &w, body, u_index, "mbk_force_add_mobility_coulomb_friction");
    return rc < 0 ? rc : fe_add(f, &fe_mob_friction, &w, p);
}
