/* Built-in value types for discrete variables and cache entries. */
#include "mbk/value.h"
#include "mbk/spatial.h"
#include "mbk/status.h"

#include <stdalign.h>
#include <string.h>

#define PLAIN_TYPE(var, cname, ctype) \
    const mbk_value_type var = {.name = cname, .size = sizeof(ctype), .align = alignof(ctype)}

PLAIN_TYPE(mbk_value_double, "double", double);
PLAIN_TYPE(mbk_value_int, "int", int);
PLAIN_TYPE(mbk_value_bool, "bool", bool);
PLAIN_TYPE(mbk_value_vec3, "mbk_vec3", mbk_vec3);
PLAIN_TYPE(mbk_value_mat33, "mbk_mat33", mbk_mat33);
PLAIN_TYPE(mbk_value_transform, "mbk_transform", mbk_transform);
PLAIN_TYPE(mbk_value_spatial_vec, "mbk_spatial_vec", mbk_spatial_vec);

mbk_value_type mbk_value_array_of_double(int n)
{
    mbk_value_type t = {.name = "double[]", .size = (size_t)(n > 0 ? n : 0) * sizeof(double),
                        .align = alignof(double)};
    return t;
}

mbk_value_type mbk_value_array_of_int(int n)
{
    mbk_value_type t = {.name = "int[]", .size = (size_t)(n > 0 ? n : 0) * sizeof(int), .align = alignof(int)};
    return t;
}

mbk_value_type mbk_value_bytes(size_t size, size_t align)
{
    mbk_value_type t = {.name = "bytes", .size = size, .align = align};
    return t;
}

bool mbk_value_type_equal(const mbk_value_type *a, const mbk_value_type *b)
{
    if (!a || !b) return false;
    return a->size == b->size && a->align == b->align && a->copy == b->copy &&
           a->destroy == b->destroy && a->serialize == b->serialize &&
           a->deserialize == b->deserialize && a->name && b->name && strcmp(a->name, b->name) == 0;
}

int mbk_value_type_check(const mbk_value_type *type)
{
    if (!type) return mbk_set_error(MBK_EINVAL, "value type is NULL; pass e.g. &mbk_value_double");
    if (!type->name)
        return mbk_set_error(MBK_EINVAL, "value type has no name; give it a string literal name");
    if (type->size == 0)
        return mbk_set_error(MBK_EINVAL, "value type '%s' has size 0; give it a positive size",
                             type->name);
    /* a State block holds every value: sizes near SIZE_MAX would wrap its layout arithmetic */
    if (type->size > MBK_VALUE_MAX_SIZE)
        return mbk_set_error(MBK_EINVAL, "value type '%s' has size %zu bytes, above the %zu a State value may "
                             "have; keep large data outside the State (e.g. in the subsystem) and store a "
                             "handle", type->name, type->size, (size_t)MBK_VALUE_MAX_SIZE);
    if (type->align == 0 || type->align > 64 || (type->align & (type->align - 1)))
        return mbk_set_error(MBK_EINVAL,
                             "value type '%s' has alignment %zu; use a power of two up to 64",
                             type->name, type->align);
    return MBK_OK;
}
