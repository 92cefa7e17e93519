/* Checkpoint files: the container every mbk checkpoint uses (magic, byte order,
 * version, kind, System fingerprint, payload, CRC-32), atomic file writes, and
 * States as checkpoints (t, q, u, z and the discrete variables).
 *
 * docs/checkpoints.md describes the format field by field. Numbers are written
 * in the writer's byte order (recorded by the byte-order mark); every
 * multi-byte field is read with memcpy (the byte streams of
 * src/checkpoint_bytes.c), so an image needs no alignment. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "mbk/alloc.h"
#include "mbk/checkpoint.h"
#include "mbk/status.h"
#include "state_impl.h"

/* ------------------------------------------------------------------ */
/* The container                                                        */
/* ------------------------------------------------------------------ */

/* magic, byte-order mark, version, kind, reserved, fingerprint, payload size */
enum { CK_HEADER = 40, CK_TRAILER = 4, CK_BOM = 0x01020304 };
static const unsigned char ck_magic[8] = {0x89, 'M', 'B', 'K', 0x0D, 0x0A, 0x1A, 0x0A};

static uint32_t ck_crc(const void *p, size_t n) { return (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), p, n); }

/* "a State checkpoint (kind 1)", for messages. */
static void kind_phrase(uint32_t kind, char *buf, size_t n)
{
    if (kind == MBK_CHECKPOINT_STATE) snprintf(buf, n, "a State checkpoint (kind 1)");
    else if (kind == MBK_CHECKPOINT_INTEGRATOR) snprintf(buf, n, "an integrator checkpoint (kind 2)");
    else snprintf(buf, n, "a checkpoint of kind %u", kind);
}

/* Header fields of an image at h (at least CK_HEADER bytes). */
static void ck_write_header(unsigned char *h, uint32_t kind, uint64_t fingerprint, uint64_t payload)
{
    mbk_bytes_writer w = mbk_bytes_writer_make(h, CK_HEADER);
    mbk_bytes_put(&w, ck_magic, sizeof ck_magic);
    mbk_bytes_put_u32(&w, CK_BOM);
    mbk_bytes_put_u32(&w, MBK_CHECKPOINT_VERSION);
    mbk_bytes_put_u32(&w, kind);
    mbk_bytes_put_u32(&w, 0);
    mbk_bytes_put_u64(&w, fingerprint);
    mbk_bytes_put_u64(&w, payload);
}

/* The CRC-32 of header and payload, after them. */
static void ck_seal(unsigned char *img, uint64_t payload)
{
    uint32_t c = ck_crc(img, CK_HEADER + (size_t)payload);
    memcpy(img + CK_HEADER + payload, &c, sizeof c);
}

/* What can be judged from the first `have` bytes of an image of `total` bytes:
   magic, byte order and the size the header announces. MBK_OK, or a status with
   the reason (a phrase about "the checkpoint") in why. */
static int ck_check_start(const unsigned char *b, size_t have, uint64_t total, char *why, size_t cap)
{
    if (total == 0) return snprintf(why, cap, "the checkpoint is empty (0 bytes)"), MBK_EPARSE;
    size_t m = have < sizeof ck_magic ? have : sizeof ck_magic;
    if (memcmp(b, ck_magic, m) != 0)
        return snprintf(why, cap, "this is not an mbk checkpoint (it does not start with the "
                        "checkpoint magic bytes \\x89MBK\\r\\n\\x1a\\n)"), MBK_EPARSE;
    if (total < CK_HEADER + CK_TRAILER || have < CK_HEADER)
        return snprintf(why, cap, "the checkpoint is truncated: %llu bytes, less than its %d-byte "
                        "header and checksum", (unsigned long long)total, CK_HEADER + CK_TRAILER), MBK_EPARSE;
    uint32_t bom, swapped = 0x04030201u;
    memcpy(&bom, b + 8, sizeof bom);
    if (bom == swapped)
        return snprintf(why, cap, "the checkpoint was written on a machine of the other byte "
                        "order; checkpoints are read on machines of the byte order that wrote them"),
               MBK_EPARSE;
    if (bom != CK_BOM)
        return snprintf(why, cap, "the checkpoint is damaged: its byte-order mark is 0x%08x, not "
                        "0x%08x", bom, (unsigned)CK_BOM), MBK_EPARSE;
    uint64_t payload;
    memcpy(&payload, b + 32, sizeof payload);
    if (payload > UINT64_MAX - CK_HEADER - CK_TRAILER || total < payload + CK_HEADER + CK_TRAILER)
        return snprintf(why, cap, "the checkpoint is truncated (or damaged): it has %llu bytes, its "
                        "header announces %llu", (unsigned long long)total,
                        payload > UINT64_MAX - CK_HEADER - CK_TRAILER
                            ? (unsigned long long)UINT64_MAX
                            : (unsigned long long)(payload + CK_HEADER + CK_TRAILER)), MBK_EPARSE;
    if (total > payload + CK_HEADER + CK_TRAILER)
        return snprintf(why, cap, "the checkpoint is damaged: it has %llu bytes, its header "
                        "announces %llu (bytes were appended, or two files joined)",
                        (unsigned long long)total, (unsigned long long)(payload + CK_HEADER + CK_TRAILER)),
               MBK_EPARSE;
    return MBK_OK;
}

/* The whole check of an image; why gets the reason on failure. */
static int ck_unpack(const void *buf, size_t size, uint32_t kind, const uint64_t *fingerprint,
                     const unsigned char **payload, size_t *n, char *why, size_t cap)
{
    const unsigned char *b = buf;
    if (!b && size) return snprintf(why, cap, "the image pointer is NULL"), MBK_EINVAL;
    int rc = ck_check_start(b, size, size, why, cap);
    if (rc) return rc;
    uint64_t p;
    memcpy(&p, b + 32, sizeof p);
    uint32_t stored, crc = ck_crc(b, CK_HEADER + (size_t)p);
    memcpy(&stored, b + CK_HEADER + p, sizeof stored);
    if (stored != crc)
        return snprintf(why, cap, "the checkpoint is damaged: its checksum (CRC-32 0x%08x) does not "
                        "match its contents (0x%08x)", stored, crc), MBK_EPARSE;
    uint32_t version, k;
    uint64_t fp;
    memcpy(&version, b + 12, sizeof version);
    memcpy(&k, b + 16, sizeof k);
    memcpy(&fp, b + 24, sizeof fp);
    if (version != MBK_CHECKPOINT_VERSION)
        return snprintf(why, cap, "the checkpoint has format version %u; this library reads version "
                        "%d%s", version, MBK_CHECKPOINT_VERSION,
                        version > MBK_CHECKPOINT_VERSION ? ": read it with the newer mbk that wrote it" : ""),
               MBK_EPARSE;
    if (k != kind) {
        char have[64], want[64];
        kind_phrase(k, have, sizeof have);
        kind_phrase(kind, want, sizeof want);
        return snprintf(why, cap, "this is %s, not %s", have, want), MBK_EPARSE;
    }
    if (fingerprint && fp != *fingerprint)
        return snprintf(why, cap, "the checkpoint comes from another System: its structural "
                        "fingerprint is %016llx, this System's is %016llx (another model or "
                        "topology, other Model-stage defaults, or an mbk build whose State layout "
                        "differs)", (unsigned long long)fp, (unsigned long long)*fingerprint),
               MBK_ESTALE;
    *payload = b + CK_HEADER;
    *n = (size_t)p;
    return MBK_OK;
}

int mbk_checkpoint_pack(uint32_t kind, uint64_t fingerprint, const void *payload, size_t n, void *buf,
                        size_t capacity, size_t *size)
{
    const char *fn = "mbk_checkpoint_pack";
    if (!size) return mbk_set_error(MBK_EINVAL, "%s: size is NULL", fn);
    if (!payload && n) return mbk_set_error(MBK_EINVAL, "%s: payload is NULL", fn);
    if (n > SIZE_MAX - CK_HEADER - CK_TRAILER) return mbk_set_error(MBK_EINVAL, "%s: payload too large", fn);
    *size = n + CK_HEADER + CK_TRAILER;
    if (!buf) return MBK_OK;
    if (capacity < *size)
        return mbk_set_error(MBK_EINVAL, "%s: capacity %zu is less than the %zu bytes the image needs; "
                             "call with buf NULL to ask the size", fn, capacity, *size);
    unsigned char *b = buf;
    ck_write_header(b, kind, fingerprint, n);
    if (n) memmove(b + CK_HEADER, payload, n);
    ck_seal(b, n);
    return MBK_OK;
}

int mbk_checkpoint_unpack(const void *buf, size_t size, uint32_t kind, const uint64_t *fingerprint,
                          const void **payload, size_t *n)
{
    if (!payload || !n) return mbk_set_error(MBK_EINVAL, "mbk_checkpoint_unpack: payload or n is NULL");
    char why[400];
    const unsigned char *p = NULL;
    size_t m = 0;
    int rc = ck_unpack(buf, size, kind, fingerprint, &p, &m, why, sizeof why);
    if (rc) return mbk_set_error(rc, "%s", why);
    *payload = p;
    *n = m;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

static int io_error(const char *what, const char *path, int err)
{
    return mbk_set_error(MBK_EIO, "cannot %s '%s': %s", what, path, strerror(err));
}

/* Write all n bytes to fd. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Flush the directory holding path, so that a rename in it is on disk too. Failures
   are ignored: some file systems cannot fsync a directory, and the file is whole. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else return;
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* The file the symlink at link names (made or not yet; a relative target is beside the
   link) into out: false if it cannot be read. */
static bool link_target(const char *link, char *out, size_t cap)
{
    if (cap >= 4096 && realpath(link, out)) return true;
    char t[4096];
    ssize_t n = readlink(link, t, sizeof t - 1);
    if (n < 0) return false;
    t[n] = '\0';
    const char *slash = strrchr(link, '/');
    int k = t[0] == '/' || !slash ? snprintf(out, cap, "%s", t)
                                  : snprintf(out, cap, "%.*s/%s", (int)(slash - link), link, t);
    return k > 0 && (size_t)k < cap;
}

/* Into a path that is not a regular file (a FIFO, a device): written in place. */
static int write_in_place(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return io_error("open", path, errno);
    const char *step = write_all(fd, data, size) != 0 ? "write" : NULL;
    int err = errno;
    if (close(fd) != 0 && !step) step = "close", err = errno;
    return step ? io_error(step, path, err) : MBK_OK;
}

int mbk_checkpoint_write_file(const char *path, const void *data, size_t size)
{
    static atomic_uint counter;
    if (!path || !*path) return mbk_set_error(MBK_EINVAL, "mbk_checkpoint_write_file: path is NULL or empty");
    if (!data && size) return mbk_set_error(MBK_EINVAL, "mbk_checkpoint_write_file: data is NULL");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return mbk_set_error(MBK_EIO, "cannot write '%s': it is a directory; give a file name", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return write_in_place(path, data, size);
    /* a symlink's target gets the new file: renaming over the link would replace the link */
    char target[4096];
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && link_target(path, target, sizeof target)) path = target;
    size_t len = strlen(path) + 48;
    char *tmp = mbk_malloc(len);
    if (!tmp) return MBK_ENOMEM;
    int fd = -1;
    for (int attempt = 0; attempt < 1000 && fd < 0; ++attempt) {
        snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1u));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int rc = io_error("create a temporary file beside", path, errno);
        mbk_free(tmp);
        return rc;
    }
    const char *step = NULL;
    if (write_all(fd, data, size) != 0) step = "write the temporary file for";
    else if (fsync(fd) != 0) step = "flush (fsync) the temporary file for";
    int err = errno;
    if (close(fd) != 0 && !step) step = "close the temporary file for", err = errno;
    if (!step && rename(tmp, path) != 0) step = "rename the temporary file over", err = errno;
    if (step) {
        unlink(tmp);
        mbk_free(tmp);
        return io_error(step, path, err);
    }
    mbk_free(tmp);
    sync_parent(path);
    return MBK_OK;
}

/* Read the whole file; why gets the reason of a refusal. */
static int read_file(const char *path, unsigned char **data, size_t *size, char *why, size_t cap)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return snprintf(why, cap, "cannot open it: %s", strerror(errno)), MBK_EIO;
    struct stat st;
    int rc = MBK_OK;
    unsigned char head[CK_HEADER];
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        rc = MBK_EIO, snprintf(why, cap, "cannot stat it: %s", strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        rc = MBK_EIO, snprintf(why, cap, "it is a directory, not a checkpoint file");
    } else if (!S_ISREG(st.st_mode)) {
        rc = MBK_EIO, snprintf(why, cap, "it is not a regular file");
    } else {
        uint64_t total = (uint64_t)st.st_size;
        size_t want = total < CK_HEADER ? (size_t)total : CK_HEADER;
        ssize_t got = pread(fd, head, want, 0);
        if (got < 0) rc = MBK_EIO, snprintf(why, cap, "cannot read it: %s", strerror(errno));
        else if ((size_t)got != want) rc = MBK_EIO, snprintf(why, cap, "it changed while it was read");
        else rc = ck_check_start(head, want, total, why, cap);
        if (rc == MBK_OK && total > SIZE_MAX) rc = MBK_ENOMEM, snprintf(why, cap, "it is too large");
        if (rc == MBK_OK && !(buf = mbk_malloc((size_t)total))) rc = MBK_ENOMEM, snprintf(why, cap, "out of memory");
        for (size_t off = 0; rc == MBK_OK && off < total;) {
            ssize_t k = pread(fd, buf + off, (size_t)total - off, (off_t)off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) rc = MBK_EIO, snprintf(why, cap, "cannot read it: %s", k < 0 ? strerror(errno) : "it became shorter");
            else off += (size_t)k;
        }
        if (rc == MBK_OK) *data = buf, *size = (size_t)total;
    }
    if (rc != MBK_OK) mbk_free(buf);
    close(fd);
    return rc;
}

int mbk_checkpoint_read_file(const char *path, void **data, size_t *size)
{
    if (!path || !data || !size) return mbk_set_error(MBK_EINVAL, "mbk_checkpoint_read_file: path, data or size is NULL");
    char why[400];
    unsigned char *b = NULL;
    size_t n = 0;
    int rc = read_file(path, &b, &n, why, sizeof why);
    if (rc) return mbk_set_error(rc, "'%s': %s", path, why);
    *data = b;
    *size = n;
    return MBK_OK;
}

/* ------------------------------------------------------------------ */
/* States                                                               */
/* ------------------------------------------------------------------ */

enum { ENC_BYTES = 0, ENC_SERIALIZED = 1 };

/* A value type whose bytes own something (it has copy or destroy ops). */
static int owns_memory(const mbk_value_type *t) { return t->copy || t->destroy; }

/* "discrete variable 2 of subsystem 1 ('forces')", for messages. */
static void var_name(const mbk_system *sys, int sub, int index, char *buf, size_t n)
{
    const char *name = mbk_system_get_subsystem_name(sys, sub);
    snprintf(buf, n, "discrete variable %d of subsystem %d ('%s')", index, sub, name ? name : "?");
}

/* Bytes a custom value serializes to, into *n. */
static int value_size(const mbk_system *sys, const mbk_state *s, int k, int i, size_t *n, const char *fn)
{
    const st_disc *d = &st_disc_recs(s)[st_sub_of(s, k)->disc0 + i];
    char nm[160];
    if (!owns_memory(&d->type)) return *n = d->type.size, MBK_OK;
    var_name(sys, k, i, nm, sizeof nm);
    if (!d->type.serialize || !d->type.deserialize)
        return mbk_set_error(MBK_EINVAL, "%s: %s holds '%s', a type with %s op but no %s op; give "
                             "the type serialize and deserialize ops to checkpoint it", fn, nm,
                             d->type.name, d->type.copy ? "a copy" : "a destroy",
                             d->type.serialize ? "deserialize" : "serialize");
    *n = 0;
    if (d->type.serialize(s->block + d->off, NULL, 0, n) != 0)
        return mbk_set_error(MBK_EUSER, "%s: the serialize op of type '%s' failed on %s%s%s", fn,
                             d->type.name, nm, mbk_last_error()[0] ? ": " : "", mbk_last_error());
    return MBK_OK;
}

/* The payload of a State image (a counting writer only counts). */
static int state_payload(const mbk_system *sys, const mbk_state *s, mbk_bytes_writer *w, const char *fn)
{
    const st_hdr *h = st_hdr_of(s);
    mbk_bytes_put_f64(w, h->t);
    mbk_bytes_put_u32(w, (uint32_t)h->nsub);
    for (int k = 0; k < h->nsub; ++k) {
        const st_sub *b = st_sub_of(s, k);
        mbk_bytes_put_u32(w, (uint32_t)b->nq);
        mbk_bytes_put_u32(w, (uint32_t)b->nu);
        mbk_bytes_put_u32(w, (uint32_t)b->nz);
        mbk_bytes_put_u32(w, (uint32_t)b->ndisc);
    }
    for (int k = 0; k < h->nsub; ++k) {
        for (int i = 0; i < st_sub_of(s, k)->ndisc; ++i) {
            const st_disc *d = &st_disc_recs(s)[st_sub_of(s, k)->disc0 + i];
            size_t n = 0, len = strlen(d->type.name);
            int rc = value_size(sys, s, k, i, &n, fn);
            if (rc < 0) return rc;
            mbk_bytes_put_u32(w, (uint32_t)k);
            mbk_bytes_put_u32(w, (uint32_t)i);
            mbk_bytes_put_u32(w, (uint32_t)d->invalidates);
            mbk_bytes_put_u32(w, (uint32_t)d->alloc_stage);
            mbk_bytes_put_u32(w, owns_memory(&d->type) ? ENC_SERIALIZED : ENC_BYTES);
            mbk_bytes_put_u32(w, (uint32_t)len);
            mbk_bytes_put(w, d->type.name, len);
            mbk_bytes_put_u64(w, d->type.size);
            mbk_bytes_put_u64(w, n);
            if (!owns_memory(&d->type)) {
                mbk_bytes_put(w, s->block + d->off, n);
            } else {
                size_t n2 = 0;
                void *dst = mbk_bytes_put_space(w, n);
                if (dst && (d->type.serialize(s->block + d->off, dst, n, &n2) != 0 || n2 != n)) {
                    char nm[160];
                    var_name(sys, k, i, nm, sizeof nm);
                    return mbk_set_error(MBK_EUSER, "%s: the serialize op of type '%s' %s on %s "
                                         "(it asked for %zu bytes, then wrote %zu)", fn, d->type.name,
                                         n2 != n ? "changed its size" : "failed", nm, n, n2);
                }
            }
        }
    }
    int ny = h->nq + h->nu + h->nz;
    mbk_bytes_put(w, st_dbl_at(s, h->y_off), (size_t)ny * sizeof(double));
    return MBK_OK;
}

/* "q[3]", "u[0]", "z[1]" for y[i] (i < 0: "t"). */
static void y_name(const st_hdr *h, int i, char *buf, size_t n)
{
    if (i < 0) snprintf(buf, n, "t");
    else if (i < h->nq) snprintf(buf, n, "q[%d]", i);
    else if (i < h->nq + h->nu) snprintf(buf, n, "u[%d]", i - h->nq);
    else snprintf(buf, n, "z[%d]", i - h->nq - h->nu);
}

/* State image into buf (NULL: size only). */
static int state_image(const mbk_state *s, const mbk_system *sys, void *buf, size_t capacity, size_t *size,
                       const char *fn)
{
    if (!size) return mbk_set_error(MBK_EINVAL, "%s: size is NULL", fn);
    int rc = mbk_system_check_state(sys, s);
    if (rc < 0) return mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    const st_hdr *h = st_hdr_of(s);
    if (h->stage < MBK_STAGE_MODEL)
        return mbk_set_error(MBK_ESTAGE, "%s: the State is realized only to %s; realize it to Model "
                             "(or later) before saving: its sizes are known from Model", fn,
                             mbk_stage_name((mbk_stage)h->stage));
    int ny = h->nq + h->nu + h->nz, bad = mbk_find_nonfinite(st_dbl_at(s, h->y_off), ny);
    if (bad >= 0 || !isfinite(h->t)) {
        char nm[32];
        y_name(h, bad, nm, sizeof nm);
        return mbk_set_error(MBK_ENOTFINITE, "%s: the State's %s is %g; a checkpoint of it could not be loaded",
                             fn, nm, bad < 0 ? h->t : st_dbl_at(s, h->y_off)[bad]);
    }
    uint64_t fp = mbk_system_get_fingerprint(sys);
    if (fp == 0) return mbk_set_error(mbk_last_status(), "%s: %s", fn, mbk_last_error());
    mbk_bytes_writer w = mbk_bytes_writer_make(NULL, 0);
    if ((rc = state_payload(sys, s, &w, fn)) < 0) return rc;
    size_t p = w.pos, total = p + CK_HEADER + CK_TRAILER;
    *size = total;
    if (!buf) return MBK_OK;
    if (capacity < total)
        return mbk_set_error(MBK_EINVAL, "%s: capacity %zu is less than the %zu bytes the image "
                             "needs; call with buf NULL to ask the size", fn, capacity, total);
    unsigned char *b = buf;
    w = mbk_bytes_writer_make(b + CK_HEADER, p);
    if ((rc = state_payload(sys, s, &w, fn)) < 0) return rc;
    if (w.pos != p || w.overrun) return mbk_set_error(MBK_EUSER, "%s: the State's serialized size changed while it was written", fn);
    ck_write_header(b, MBK_CHECKPOINT_STATE, fp, p);
    ck_seal(b, p);
    return MBK_OK;
}

int mbk_state_serialize(const mbk_state *s, const mbk_system *sys, void *buf, size_t capacity, size_t *size)
{
    return state_image(s, sys, buf, capacity, size, "mbk_state_serialize");
}

int mbk_state_save(const mbk_state *s, const mbk_system *sys, const char *path)
{
    const char *fn = "mbk_state_save";
    if (!path || !*path) return mbk_set_error(MBK_EINVAL, "%s: path is NULL or empty", fn);
    size_t n = 0;
    int rc = state_image(s, sys, NULL, 0, &n, fn);
    if (rc < 0) return rc;
    unsigned char *buf = mbk_malloc(n);
    if (!buf) return MBK_ENOMEM;
    rc = state_image(s, sys, buf, n, &n, fn);
    if (rc == MBK_OK) {
        rc = mbk_checkpoint_write_file(path, buf, n);
        if (rc < 0) mbk_set_error(rc, "%s: %s", fn, mbk_last_error());
    }
    mbk_free(buf);
    return rc;
}

/* One discrete variable as the file has it. */
typedef struct ck_var {
    uint32_t sub, index, invalidates, alloc_stage, encoding, name_len;
    const unsigned char *name, *value;
    uint64_t type_size, value_len;
} ck_var;

/* A State payload, parsed (pointers into the image). */
typedef struct ck_state {
    double t;
    uint32_t nsub, ndisc, ny;
    uint32_t *counts; /* nq, nu, nz, ndisc per subsystem */
    ck_var *vars;
    const unsigned char *y;
} ck_state;

static void ck_state_free(ck_state *c)
{
    mbk_free(c->counts);
    mbk_free(c->vars);
}

/* Parse and check the payload's structure against sys (no State touched). */
static int parse_state(const unsigned char *p, size_t n, const mbk_system *sys, ck_state *c, char *why, size_t cap)
{
    mbk_bytes_reader r = mbk_bytes_reader_make(p, n);
    c->t = mbk_bytes_get_f64(&r);
    c->nsub = mbk_bytes_get_u32(&r);
    uint32_t nsys = (uint32_t)mbk_system_get_num_subsystems(sys);
    if (r.overrun || c->nsub != nsys)
        return snprintf(why, cap, "the checkpoint is inconsistent: it has %u subsystems, the System %u",
                        c->nsub, nsys), r.overrun ? MBK_EPARSE : MBK_ESTALE;
    c->counts = mbk_calloc((size_t)c->nsub * 4 + 1, sizeof *c->counts);
    if (!c->counts) return snprintf(why, cap, "out of memory"), MBK_ENOMEM;
    uint64_t ny = 0, ndisc = 0;
    for (uint32_t k = 0; k < c->nsub; ++k) {
        for (int j = 0; j < 4; ++j) c->counts[4 * k + j] = mbk_bytes_get_u32(&r);
        ny += (uint64_t)c->counts[4 * k] + c->counts[4 * k + 1] + c->counts[4 * k + 2];
        ndisc += c->counts[4 * k + 3];
    }
    if (r.overrun || ndisc > n / 32 || ny > n / sizeof(double))
        return snprintf(why, cap, "the checkpoint is inconsistent: its counts do not fit its size"), MBK_EPARSE;
    c->ndisc = (uint32_t)ndisc;
    c->ny = (uint32_t)ny;
    c->vars = mbk_calloc((size_t)ndisc + 1, sizeof *c->vars);
    if (!c->vars) return snprintf(why, cap, "out of memory"), MBK_ENOMEM;
    uint32_t at = 0;
    for (uint32_t k = 0; k < c->nsub; ++k)
        for (uint32_t i = 0; i < c->counts[4 * k + 3]; ++i, ++at) {
            ck_var *v = &c->vars[at];
            v->sub = mbk_bytes_get_u32(&r);
            v->index = mbk_bytes_get_u32(&r);
            v->invalidates = mbk_bytes_get_u32(&r);
            v->alloc_stage = mbk_bytes_get_u32(&r);
            v->encoding = mbk_bytes_get_u32(&r);
            v->name_len = mbk_bytes_get_u32(&r);
            v->name = mbk_bytes_get_span(&r, v->name_len);
            v->type_size = mbk_bytes_get_u64(&r);
            v->value_len = mbk_bytes_get_u64(&r);
            v->value = mbk_bytes_get_span(&r, v->value_len);
            if (r.overrun || v->sub != k || v->index != i || v->encoding > ENC_SERIALIZED ||
                (v->alloc_stage != MBK_STAGE_TOPOLOGY && v->alloc_stage != MBK_STAGE_MODEL))
                return snprintf(why, cap, "the checkpoint is inconsistent: discrete variable record %u "
                                "is malformed", at), MBK_EPARSE;
        }
    c->y = mbk_bytes_get_span(&r, (uint64_t)c->ny * sizeof(double));
    if (r.overrun || r.pos != n)
        return snprintf(why, cap, "the checkpoint is inconsistent: its payload has %zu bytes, its "
                        "contents %zu", n, r.pos), MBK_EPARSE;
    return MBK_OK;
}

/* Put the file's value of one discrete variable into the State being built. */
static int apply_var(mbk_state *s, const mbk_system *sys, const ck_var *v, char *why, size_t cap)
{
    const st_sub *b = st_sub_of(s, (int)v->sub);
    char nm[160];
    var_name(sys, (int)v->sub, (int)v->index, nm, sizeof nm);
    if (v->index >= (uint32_t)b->ndisc)
        return snprintf(why, cap, "the checkpoint has %s, which this System's State does not have", nm),
               MBK_ESTALE;
    st_disc *d = &st_disc_recs(s)[b->disc0 + (int)v->index];
    size_t len = strlen(d->type.name);
    if (len != v->name_len || memcmp(d->type.name, v->name, len) != 0 || d->type.size != v->type_size ||
        (uint32_t)d->invalidates != v->invalidates || (uint32_t)d->alloc_stage != v->alloc_stage)
        return snprintf(why, cap, "%s is '%.*s' (%llu bytes, invalidates %s) in the checkpoint but '%s' "
                        "(%zu bytes, invalidates %s) in this System", nm, (int)(v->name_len > 64 ? 64 : v->name_len),
                        (const char *)v->name, (unsigned long long)v->type_size,
                        mbk_stage_name((mbk_stage)v->invalidates), d->type.name, d->type.size,
                        mbk_stage_name((mbk_stage)d->invalidates)), MBK_ESTALE;
    void *dst = s->block + d->off;
    if (!owns_memory(&d->type)) {
        if (v->encoding != ENC_BYTES || v->value_len != d->type.size)
            return snprintf(why, cap, "the checkpoint is inconsistent: %s holds %llu bytes, its type %zu",
                            nm, (unsigned long long)v->value_len, d->type.size), MBK_EPARSE;
        memcpy(dst, v->value, d->type.size);
        return MBK_OK;
    }
    if (v->encoding != ENC_SERIALIZED)
        return snprintf(why, cap, "the checkpoint is inconsistent: %s is written as plain bytes but its "
                        "type '%s' has copy or destroy ops", nm, d->type.name), MBK_EPARSE;
    if (!d->type.deserialize)
        return snprintf(why, cap, "%s holds '%s', a type with no deserialize op; give the type "
                        "serialize and deserialize ops to load it", nm, d->type.name), MBK_EINVAL;
    st_value_destroy(&d->type, dst);
    mbk_clear_error();
    if (d->type.deserialize(dst, v->value, (size_t)v->value_len) != 0) {
        memset(dst, 0, d->type.size); /* all-zero bytes are a valid value */
        return snprintf(why, cap, "the deserialize op of type '%s' refused the %llu bytes of %s%s%s",
                        d->type.name, (unsigned long long)v->value_len, nm,
                        mbk_last_error()[0] ? ": " : "", mbk_last_error()), MBK_EPARSE;
    }
    return MBK_OK;
}

/* Build the State of a parsed payload in tmp (initialized from sys), realized to Instance. */
static int build_state(mbk_state *tmp, const mbk_system *sys, const ck_state *c, char *why, size_t cap)
{
    int rc;
    /* the Model-stage choices first: they decide the layout Model makes */
    for (uint32_t j = 0; j < c->ndisc; ++j)
        if (c->vars[j].invalidates == MBK_STAGE_MODEL && (rc = apply_var(tmp, sys, &c->vars[j], why, cap)))
            return rc;
    if ((rc = mbk_system_realize(sys, tmp, MBK_STAGE_MODEL)) < 0)
        return snprintf(why, cap, "realizing the loaded State to Model failed: %s", mbk_last_error()), rc;
    for (uint32_t k = 0; k < c->nsub; ++k) {
        const st_sub *b = st_sub_of(tmp, (int)k);
        const uint32_t *f = &c->counts[4 * k];
        if (f[0] != (uint32_t)b->nq || f[1] != (uint32_t)b->nu || f[2] != (uint32_t)b->nz ||
            f[3] != (uint32_t)b->ndisc)
            return snprintf(why, cap, "subsystem %u ('%s') has nq %u, nu %u, nz %u and %u discrete "
                            "variables in the checkpoint, %d, %d, %d and %d in this System with the "
                            "checkpoint's Model-stage choices", k, mbk_system_get_subsystem_name(sys, (int)k),
                            f[0], f[1], f[2], f[3], b->nq, b->nu, b->nz, b->ndisc), MBK_ESTALE;
    }
    for (uint32_t j = 0; j < c->ndisc; ++j)
        if (c->vars[j].invalidates != MBK_STAGE_MODEL && (rc = apply_var(tmp, sys, &c->vars[j], why, cap)))
            return rc;
    if (!isfinite(c->t)) return snprintf(why, cap, "the checkpoint's time is %g", c->t), MBK_ENOTFINITE;
    double *y = st_dbl_at(tmp, st_hdr_of(tmp)->y_off);
    if (c->ny) memcpy(y, c->y, (size_t)c->ny * sizeof(double));
    int bad = mbk_find_nonfinite(y, (int)c->ny);
    if (bad >= 0) {
        char nm[32];
        y_name(st_hdr_of(tmp), bad, nm, sizeof nm);
        return snprintf(why, cap, "the checkpoint's %s is %g", nm, y[bad]), MBK_ENOTFINITE;
    }
    st_hdr_of(tmp)->t = c->t;
    st_invalidate(tmp, MBK_STAGE_INSTANCE);
    if ((rc = mbk_system_realize(sys, tmp, MBK_STAGE_INSTANCE)) < 0)
        return snprintf(why, cap, "realizing the loaded State to Instance failed: %s", mbk_last_error()), rc;
    return MBK_OK;
}

/* The State of an image into s; `where` names the source in messages. */
static int state_from_image(mbk_state *s, const mbk_system *sys, const void *buf, size_t size, const char *fn,
                            const char *where)
{
    if (!s) return mbk_set_error(MBK_EINVAL, "%s: state is NULL", fn);
    if (!sys) return mbk_set_error(MBK_EINVAL, "%s: system is NULL", fn);
    uint64_t fp = mbk_system_get_fingerprint(sys);
    if (fp == 0) return mbk_set_error(mbk_last_status(), "%s: %s", fn, mbk_last_error());
    char why[460];
    const unsigned char *p = NULL;
    size_t n = 0;
    ck_state c;
    memset(&c, 0, sizeof c);
    mbk_state *tmp = NULL;
    int rc = ck_unpack(buf, size, MBK_CHECKPOINT_STATE, &fp, &p, &n, why, sizeof why);
    if (rc == MBK_OK) rc = parse_state(p, n, sys, &c, why, sizeof why);
    if (rc == MBK_OK) {
        tmp = mbk_state_create();
        if (!tmp || mbk_state_init(tmp, sys) < 0) rc = MBK_ENOMEM, snprintf(why, sizeof why, "out of memory");
    }
    if (rc == MBK_OK) rc = build_state(tmp, sys, &c, why, sizeof why);
    ck_state_free(&c);
    if (rc == MBK_OK) {
        /* swap the finished block in: nothing can fail from here */
        unsigned char *blk = s->block;
        size_t capacity = s->capacity;
        s->block = tmp->block, s->capacity = tmp->capacity;
        tmp->block = blk, tmp->capacity = capacity;
    }
    mbk_state_destroy(tmp);
    if (rc) return mbk_set_error(rc, "%s: %s: %s; the State was not changed", fn, where, why);
    return MBK_OK;
}

int mbk_state_deserialize(mbk_state *s, const mbk_system *sys, const void *buf, size_t size)
{
    return state_from_image(s, sys, buf, size, "mbk_state_deserialize", "the image");
}

int mbk_state_load(mbk_state *s, const mbk_system *sys, const char *path)
{
    const char *fn = "mbk_state_load";
    if (!path || !*path) return mbk_set_error(MBK_EINVAL, "%s: path is NULL or empty", fn);
    if (!s) return mbk_set_error(MBK_EINVAL, "%s: state is NULL", fn);
    char why[400], where[300];
    unsigned char *buf = NULL;
    size_t n = 0;
    int rc = read_file(path, &buf, &n, why, sizeof why);
    if (rc) return mbk_set_error(rc, "%s: '%s': %s; the State was not changed", fn, path, why);
    snprintf(where, sizeof where, "'%s'", path);
    rc = state_from_image(s, sys, buf, n, fn, where);
    mbk_free(buf);
    return rc;
}
