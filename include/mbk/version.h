/* mbk/version.h - library version. */
#ifndef MBK_VERSION_H
#define MBK_VERSION_H

#define MBK_VERSION_MAJOR 0
#define MBK_VERSION_MINOR 1
#define MBK_VERSION_PATCH 0
#define MBK_VERSION_STRING "0.1.0"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif
/* Version string of the library actually linked ("0.1.0"). */
const char *mbk_version(void);
#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
