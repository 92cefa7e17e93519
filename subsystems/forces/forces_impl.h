/* Private layout of the general force subsystem, shared by its source files. */
#ifndef MBK_FORCES_IMPL_H
#define MBK_FORCES_IMPL_H

#include "mbk/forces.h"

#define FE_MAX_PARAMS 12

typedef struct fe_elem fe_elem;

/* The law of a built-in element: its parameters are FE_MAX_PARAMS doubles at most. */
typedef struct fe_kind {
    const char *name;  /* "two-point linear spring", for messages */
    int nparams;       /* how many parameters it keeps in the State */
    /* MBK_OK, or MBK_EINVAL with a message, for a parameter set */
    int (*check)(const double *p);
    /* add the element's forces */
    int (*force)(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                 mbk_spatial_vec *F, double *tau);
    /* add the element's potential energy (NULL: none) */
    int (*energy)(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s,
                  double *pe);
    /* the public function that adds it ("mbk_force_add_two_point_linear_spring"): its
       errors name that function */
    const char *add_fn;
    /* the rate (W, >= 0) at which the element dissipates energy (Velocity); non-NULL gives the
       element a z variable of the force subsystem holding the energy dissipated so far */
    double (*dissipation)(const fe_elem *e, const double *p, const mbk_force_ctx *c, const mbk_state *s);
} fe_kind;

/* One element: a built-in law or custom ops, and where it acts. */
struct fe_elem {
    const fe_kind *kind;              /* built-in law, or NULL for a custom element */
    mbk_force_ops ops;                /* custom ops (copied) */
    void *impl;                       /* custom data, owned */
    int body[2];                      /* bodies acted on */
    mbk_vec3 station[2];              /* points on them, in each body's frame */
    mbk_transform frame[2];           /* frames on them (bushing: F on body[0], M on body[1]) */
    int coord;                        /* q or u index within body[0]'s mobilizer */
    double radius, height;            /* contact: sphere radius, ground plane height */
    double defaults[FE_MAX_PARAMS];   /* parameters new States start with */
    int param_off;                    /* its parameters' offset in the subsystem's param_var (-1: none) */
    int cache;                        /* its slot in the subsystem's force_cache (-1: none) */
    int z;                            /* its dissipated energy: z index in the subsystem (-1: none) */
    char *name;                       /* optional name, owned (NULL: unnamed) */
};

struct mbk_forces {
    mbk_system *sys;   /* owning System */
    int sub;           /* subsystem index */
    fe_elem *elems;    /* elements in the order added */
    int n, cap;        /* count and capacity */
    int enabled_var;   /* discrete variable (Instance): one int per element */
    /* One allocation each for all elements (one per element rebuilt the State n times) */
    int param_var;     /* discrete variable (Dynamics): every built-in's parameters, at param_off */
    int force_cache;   /* lazy cache (Position): position-only custom elements' forces (-1: none) */
    int ncached;       /* how many elements have a slot in force_cache */
    int nb, nu;        /* body count (with Ground) and u count of matter, fixed at Topology */
    const mbk_matter *matter; /* the System's matter subsystem, found at Topology */
};

struct mbk_force_ctx {
    const mbk_forces *f; /* the force subsystem */
    int element;         /* the element's index */
};

/* Add a force f applied at offset r from a body's origin (both in G) to its body force:
   moment r x f about the origin, and f. */
static inline void fe_add_force_at(mbk_spatial_vec *Fb, mbk_vec3 r, mbk_vec3 f)
{
    Fb->w = mbk_vec3_add(Fb->w, mbk_vec3_cross(r, f));
    Fb->v = mbk_vec3_add(Fb->v, f);
}

/* Built-in laws (force_elements.c, bushing.c, contact.c). */
extern const fe_kind fe_gravity, fe_tp_spring, fe_tp_damper, fe_tp_constant, fe_mob_spring,
    fe_mob_damper, fe_mob_constant, fe_mob_stop, fe_constant_force, fe_constant_torque,
    fe_bushing, fe_hunt_crossley, fe_mob_friction;

/* Append an element of a built-in kind with its default parameters (checked). */
int fe_add(mbk_forces *f, const fe_kind *kind, const fe_elem *where, const double *params);
/* MBK_OK if body is a body index of the matter subsystem (Ground allowed when ground_ok). */
int fe_check_body(const mbk_forces *f, int body, bool ground_ok, const char *fn);
/* Global index of the u an element's coordinate names (body[0], coord); needs matter at Topology. */
int fe_mobility_u(const fe_elem *e, const mbk_force_ctx *c);
/* Where a mobility element acts (body, coordinate within its mobilizer), checked. */
int fe_mobility_where(mbk_forces *f, fe_elem *w, int body, int coord, const char *fn);
/* MBK_OK if all n values are finite (message names what). */
int fe_check_finite(const double *v, int n, const char *what);

/* Add element i's forces into F and tau (the Dynamics-stage call; MBK_OK or the
   element's failure as a status with a message). */
int fe_element_force(const mbk_forces *f, int i, const mbk_state *s, mbk_spatial_vec *F, double *tau);

/* The force subsystem at this index of a System, or NULL if it is something else. */
const mbk_forces *fe_forces_of(const mbk_system *sys, int subsystem);

/* Element e's parameters in State s (a built-in's; unchecked: callers checked s). */
const double *fe_params(const mbk_forces *f, const fe_elem *e, const mbk_state *s);

/* Derivatives (force_jacobians.c). Whether element i is custom without calc_jacobian. */
bool fe_element_is_numeric(const mbk_forces *f, int i);
/* The sum of the enabled gravity elements' fields. */
mbk_vec3 fe_gravity_sum(const mbk_forces *f, const mbk_state *s);
/* How many enabled elements are numeric; the first one's index into *first. */
int fe_count_numeric(const mbk_forces *f, const mbk_state *s, int *first);
/* After mt_deriv_setup: every enabled element but gravity and the numeric ones gives
   its forces to matter's geometric term (mt_deriv_add_phi) and, when jacobians, ADDs
   the rest of its Jacobians (custom ones through calc_jacobian) to df_dq, df_du. */
int fe_add_jacobians(const mbk_forces *f, const mbk_state *s, bool jacobians, double *df_dq, int ldq, double *df_du,
                     int ldu);

#endif
