/* mbk/stage.h - computation stages of staged realization.
 *
 * A State is realized stage by stage from Topology to Report. Changing a
 * variable of stage g reverts every subsystem to stage g - 1 at most. */
#ifndef MBK_STAGE_H
#define MBK_STAGE_H

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef enum mbk_stage {
    MBK_STAGE_EMPTY = 0,    /* nothing allocated yet */
    MBK_STAGE_TOPOLOGY,     /* the System's structure; variables allocated */
    MBK_STAGE_MODEL,        /* modeling options; sizes of q, u, z known */
    MBK_STAGE_INSTANCE,     /* physical parameters, enabled flags, constraint slots */
    MBK_STAGE_TIME,         /* t */
    MBK_STAGE_POSITION,     /* q */
    MBK_STAGE_VELOCITY,     /* u */
    MBK_STAGE_DYNAMICS,     /* z; forces */
    MBK_STAGE_ACCELERATION, /* udot, zdot, qdotdot, multipliers */
    MBK_STAGE_REPORT,       /* output-only quantities */
    MBK_STAGE_INFINITY      /* never reached: "lazy" */
} mbk_stage;

/* Number of real stages (Empty..Report); sizes per-stage arrays. */
#define MBK_NUM_STAGES ((int)MBK_STAGE_INFINITY)

/* Name of a stage ("Position"), or "Invalid" for a value out of range. */
const char *mbk_stage_name(mbk_stage stage);
/* True for Empty..Infinity. */
int mbk_stage_is_valid(int stage);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
