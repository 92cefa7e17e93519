/* mbk/checkpoint.h - checkpoints: a State, or a whole run, written to a file
 * (or to memory) and continued later, on this machine or another of the same
 * byte order. docs/checkpoints.md describes the format field by field.
 *
 * A State checkpoint holds t, q, u, z and every discrete variable (which
 * include the Model-stage choices, the Instance-stage parameters and the
 * enabled flags of forces and constraints); the cache is not saved: a loaded
 * State is realized to Instance, and realizing it further gives the same bits
 * as the State that was saved. An integrator checkpoint holds its current
 * State plus the integrator's own state (settings, step sizes, event witness
 * values, scheduled-event times, pending events, statistics, the step op's
 * own state): the RK family resumes bitwise as if it had never stopped;
 * CVODE and IDA restart at the saved time with the saved step size (their
 * order and history are not restored).
 *
 * Every file is a container: a magic header, the byte order, the format
 * version, the kind (State or integrator), the System's structural
 * fingerprint, the payload and a CRC-32 of it all. A file that is empty,
 * truncated, damaged, not a checkpoint, of another version, kind or byte
 * order, or from another System is refused with a message saying which,
 * and the destination is left unchanged. Saving is atomic: the bytes go to
 * a temporary file in the same directory, are flushed to disk (fsync), then
 * renamed over the destination, so a crash mid-write leaves the previous
 * file whole (and at most a stray "FILE.tmp.*" beside it).
 *
 * Not saved: the System itself (build it the same way before loading), and
 * user data behind handler, reporter and force callbacks. */
#ifndef MBK_CHECKPOINT_H
#define MBK_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mbk/integrator.h"
#include "mbk/state.h"
#include "mbk/system.h"

/* Declarations here are the public API: exported from the shared library, whose
   other symbols are hidden (CMakeLists.txt, "symbol visibility"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Format version this library writes and reads. */
#define MBK_CHECKPOINT_VERSION 1

/* Kinds of checkpoint payload. */
typedef enum mbk_checkpoint_kind {
    MBK_CHECKPOINT_STATE = 1,     /* mbk_state_save / mbk_state_serialize */
    MBK_CHECKPOINT_INTEGRATOR = 2 /* mbk_integrator_save / mbk_integrator_serialize */
} mbk_checkpoint_kind;

/* ---- the System's structure --------------------------------------------- */
/* Hash of the layout of the System's States: per subsystem the numbers of q, u
   and z, and each discrete variable's and cache entry's type name, size and
   stages, as the default State has them once realized to Model. It changes
   when the topology or the default Model-stage choices do; Systems built alike
   have the same one, in any process. 0 on failure (topology not realized,
   Model realization failed; mbk_last_error() says why). */
uint64_t mbk_system_get_fingerprint(const mbk_system *sys);

/* ---- States -------------------------------------------------------------- */
/* Write s (a State of sys realized to Model or later) to path, atomically. */
int mbk_state_save(const mbk_state *s, const mbk_system *sys, const char *path);
/* Read a State of sys from path into s (any State, initialized or not), realized
   to Instance. On failure s is unchanged. */
int mbk_state_load(mbk_state *s, const mbk_system *sys, const char *path);
/* The file image of mbk_state_save in memory: with buf NULL only *size is set
   (the bytes needed); otherwise capacity must be at least that. */
int mbk_state_serialize(const mbk_state *s, const mbk_system *sys, void *buf, size_t capacity,
                        size_t *size);
/* mbk_state_load from an image in memory. On failure s is unchanged. */
int mbk_state_deserialize(mbk_state *s, const mbk_system *sys, const void *buf, size_t size);

/* ---- integrators --------------------------------------------------------- */
/* Write the integrator's current State and its own state to path, atomically
   (it must be initialized or loaded). */
int mbk_integrator_save(const mbk_integrator *ig, const char *path);
/* Continue from a checkpoint written by the same kind of integrator on a System
   built the same way: replaces mbk_integrator_initialize (settings and statistics
   come from the file). On failure the integrator is as it was. */
int mbk_integrator_load(mbk_integrator *ig, const char *path);
/* The file image of mbk_integrator_save in memory, carrying app_size bytes of the
   caller's own (app_data, may be NULL when app_size is 0): buf NULL sets only *size. */
int mbk_integrator_serialize(const mbk_integrator *ig, const void *app_data, size_t app_size,
                             void *buf, size_t capacity, size_t *size);
/* mbk_integrator_load from an image in memory. */
int mbk_integrator_deserialize(mbk_integrator *ig, const void *buf, size_t size);
/* The caller's bytes inside an integrator checkpoint image (checked as a container:
   magic, byte order, version, kind, checksum); *data points into buf. */
int mbk_integrator_get_checkpoint_app_data(const void *buf, size_t size, const void **data,
                                           size_t *n);
/* The name of the integrator that wrote an integrator checkpoint image ("RK-Merson", ...),
   copied into name (capacity bytes, NUL-terminated). */
int mbk_integrator_get_checkpoint_name(const void *buf, size_t size, char *name, size_t capacity);

/* ---- the container, for writers of their own checkpoint kinds ------------ */
/* Wrap a payload into a checkpoint image: header, payload, CRC-32. buf NULL sets
   only *size (payload size + 44). */
int mbk_checkpoint_pack(uint32_t kind, uint64_t fingerprint, const void *payload, size_t n,
                        void *buf, size_t capacity, size_t *size);
/* Check an image (size, magic, byte order, checksum, version, kind and, when
   fingerprint is not NULL, the fingerprint) and point *payload at its payload of
   *n bytes inside buf. MBK_EPARSE for a damaged or foreign image, MBK_ESTALE for
   another System's. */
int mbk_checkpoint_unpack(const void *buf, size_t size, uint32_t kind, const uint64_t *fingerprint,
                          const void **payload, size_t *n);
/* Write size bytes to path atomically (temporary file in the same directory,
   fsync, rename, fsync of the directory; a symlink's target is replaced, not the
   link; a FIFO or device is written in place). MBK_EIO with the reason on failure. */
int mbk_checkpoint_write_file(const char *path, const void *data, size_t size);
/* Read a whole checkpoint file into *data (allocated with mbk_malloc; free it
   with mbk_free). Refuses (MBK_EIO) what is not a regular file, and (MBK_EPARSE)
   an empty file or one whose size disagrees with its header. */
int mbk_checkpoint_read_file(const char *path, void **data, size_t *size);

/* ---- byte streams, for writing and reading payloads ---------------------- */
/* The fields of a payload, one after another with no padding. Numbers are put
   and got in this machine's byte order (the container's byte-order mark records
   it) through memcpy, so neither side needs alignment. Both structs are plain
   values for the stack: no allocation. */

/* A bounded writer into buf[0, capacity). With buf NULL it only counts: pos
   grows and nothing is written, which gives the size to allocate. A put that
   does not fit writes nothing, still advances pos and sets overrun. */
typedef struct mbk_bytes_writer {
    unsigned char *buf; /* NULL: count only */
    size_t capacity;    /* bytes buf holds */
    size_t pos;         /* bytes put so far */
    bool overrun;       /* a put did not fit in capacity */
} mbk_bytes_writer;

/* A bounded reader of buf[0, size). A get past the end sets overrun, yields
   zeros (or NULL for a span) and leaves pos; every later get fails too. */
typedef struct mbk_bytes_reader {
    const unsigned char *buf;
    size_t size;  /* bytes buf holds */
    size_t pos;   /* bytes got so far */
    bool overrun; /* a get ran past the end */
} mbk_bytes_reader;

/* A writer into buf of capacity bytes; buf NULL: a writer that only counts. */
mbk_bytes_writer mbk_bytes_writer_make(void *buf, size_t capacity);
/* Put n bytes from p. */
void mbk_bytes_put(mbk_bytes_writer *w, const void *p, size_t n);
/* Put one byte. */
void mbk_bytes_put_u8(mbk_bytes_writer *w, uint8_t v);
/* Put a 32-bit unsigned integer (4 bytes). */
void mbk_bytes_put_u32(mbk_bytes_writer *w, uint32_t v);
/* Put a 32-bit signed integer (4 bytes). */
void mbk_bytes_put_i32(mbk_bytes_writer *w, int32_t v);
/* Put a 64-bit unsigned integer (8 bytes). */
void mbk_bytes_put_u64(mbk_bytes_writer *w, uint64_t v);
/* Put a 64-bit signed integer (8 bytes). */
void mbk_bytes_put_i64(mbk_bytes_writer *w, int64_t v);
/* Put a double (8 bytes, IEEE 754 binary64). */
void mbk_bytes_put_f64(mbk_bytes_writer *w, double v);
/* Reserve the next n bytes for the caller to fill (a nested image, say): where
   they start, or NULL while counting or when they do not fit. */
void *mbk_bytes_put_space(mbk_bytes_writer *w, size_t n);
/* MBK_OK, or MBK_EINVAL with a message when a put did not fit. */
int mbk_bytes_writer_status(const mbk_bytes_writer *w);

/* A reader of the size bytes at buf. */
mbk_bytes_reader mbk_bytes_reader_make(const void *buf, size_t size);
/* Get n bytes into out (zeros past the end). */
void mbk_bytes_get(mbk_bytes_reader *r, void *out, size_t n);
/* Get one byte (0 past the end). */
uint8_t mbk_bytes_get_u8(mbk_bytes_reader *r);
/* Get a 32-bit unsigned integer (0 past the end). */
uint32_t mbk_bytes_get_u32(mbk_bytes_reader *r);
/* Get a 32-bit signed integer (0 past the end). */
int32_t mbk_bytes_get_i32(mbk_bytes_reader *r);
/* Get a 64-bit unsigned integer (0 past the end). */
uint64_t mbk_bytes_get_u64(mbk_bytes_reader *r);
/* Get a 64-bit signed integer (0 past the end). */
int64_t mbk_bytes_get_i64(mbk_bytes_reader *r);
/* Get a double (0 past the end). */
double mbk_bytes_get_f64(mbk_bytes_reader *r);
/* Where the next n bytes are inside buf (a blob, with its length got before),
   skipping them; NULL when fewer are left. */
const void *mbk_bytes_get_span(mbk_bytes_reader *r, uint64_t n);
/* MBK_OK, or MBK_EPARSE with a message when a get ran past the end. */
int mbk_bytes_reader_status(const mbk_bytes_reader *r);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
