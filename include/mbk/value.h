/* mbk/value.h - value types of discrete variables and cache entries.
 *
 * A value type tells the State how big a value is, how it is aligned, and
 * how to copy and destroy it. The State stores the type by value, so a type
 * built at run time (mbk_value_array_of_double) needs no storage of its own;
 * copy and destroy functions and the name string must outlive every State
 * (static functions and string literals). Values must be relocatable: the
 * State may move them with memcpy while it is being laid out (Topology,
 * Model and Instance stages). A value whose bytes are all zero must be valid
 * (used when no initial value is given).
 *
 * Checkpoints (mbk/checkpoint.h) write discrete variables. A type without
 * copy and destroy ops is written as its bytes; a type with either one (its
 * bytes own memory) needs serialize and deserialize ops, and a State holding
 * one without them is refused by mbk_state_save naming the variable. */
#ifndef MBK_VALUE_H
#define MBK_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

typedef struct mbk_value_type {
    const char *name;                          /* identifies the type in checks and messages */
    size_t size, align;                        /* bytes; align: a power of two up to 64 (honored in memory) */
    void (*copy)(void *dst, const void *src);  /* construct dst (raw memory) from src; NULL: memcpy */
    void (*destroy)(void *value);              /* release what value owns; NULL: nothing */
    /* Checkpoints, for types with a copy or destroy op: write the value as bytes into
       buf (capacity bytes) and set *size to their count; with buf NULL only set *size.
       Return 0, or nonzero on failure. The bytes need not be portable beyond machines of
       the same byte order. NULL: the type cannot be checkpointed. */
    int (*serialize)(const void *value, void *buf, size_t capacity, size_t *size);
    /* Construct a value into raw memory dst from size bytes that serialize wrote;
       return 0, or nonzero when the bytes are not a valid value (dst is then left
       unconstructed). */
    int (*deserialize)(void *dst, const void *buf, size_t size);
} mbk_value_type;

extern const mbk_value_type mbk_value_double;      /* double */
extern const mbk_value_type mbk_value_int;         /* int */
extern const mbk_value_type mbk_value_bool;        /* bool */
extern const mbk_value_type mbk_value_vec3;        /* mbk_vec3 */
extern const mbk_value_type mbk_value_mat33;       /* mbk_mat33 */
extern const mbk_value_type mbk_value_transform;   /* mbk_transform */
extern const mbk_value_type mbk_value_spatial_vec; /* mbk_spatial_vec */

/* Fixed-length array of n doubles (name "double[]"; the size tells lengths apart). */
mbk_value_type mbk_value_array_of_double(int n);
/* Fixed-length array of n ints (name "int[]"). */
mbk_value_type mbk_value_array_of_int(int n);
/* Plain bytes of the given size and alignment, copied with memcpy (name "bytes"). */
mbk_value_type mbk_value_bytes(size_t size, size_t align);
/* True when a and b describe the same type (name, size, alignment and every op). */
bool mbk_value_type_equal(const mbk_value_type *a, const mbk_value_type *b);
/* The largest value a State holds (the block's layout adds sizes up, which must not wrap;
   an allocation that large fails with MBK_ENOMEM anyway). */
#define MBK_VALUE_MAX_SIZE (SIZE_MAX / 64)
/* MBK_OK if the type is usable (name set, 0 < size <= MBK_VALUE_MAX_SIZE, align a power of two <= 64). */
int mbk_value_type_check(const mbk_value_type *type);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
