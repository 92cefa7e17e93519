/* Byte streams (mbk/checkpoint.h): the bounded writer and reader every
 * checkpoint payload is written and read with. Fields follow each other with
 * no padding, numbers in this machine's byte order, copied with memcpy so that
 * nothing needs alignment. docs/checkpoints.md, section 7.4. */
#include <string.h>

#include "mbk/checkpoint.h"
#include "mbk/status.h"

/* ------------------------------------------------------------------ */
/* Writer                                                               */
/* ------------------------------------------------------------------ */

mbk_bytes_writer mbk_bytes_writer_make(void *buf, size_t capacity)
{
    return (mbk_bytes_writer){.buf = buf, .capacity = buf ? capacity : 0, .pos = 0, .overrun = false};
}

void *mbk_bytes_put_space(mbk_bytes_writer *w, size_t n)
{
    /* counting: only the size matters */
    if (!w->buf) {
        w->pos += n;
        return NULL;
    }
    /* what does not fit is not written, but counted, so pos still tells the size needed */
    if (w->overrun || w->pos > w->capacity || n > w->capacity - w->pos) {
        w->overrun = true;
        w->pos += n;
        return NULL;
    }
    void *at = w->buf + w->pos;
    w->pos += n;
    return at;
}

void mbk_bytes_put(mbk_bytes_writer *w, const void *p, size_t n)
{
    void *at = mbk_bytes_put_space(w, n);
    if (at && n) memcpy(at, p, n);
}

void mbk_bytes_put_u8(mbk_bytes_writer *w, uint8_t v) { mbk_bytes_put(w, &v, sizeof v); }
void mbk_bytes_put_u32(mbk_bytes_writer *w, uint32_t v) { mbk_bytes_put(w, &v, sizeof v); }
void mbk_bytes_put_i32(mbk_bytes_writer *w, int32_t v) { mbk_bytes_put(w, &v, sizeof v); }
void mbk_bytes_put_u64(mbk_bytes_writer *w, uint64_t v) { mbk_bytes_put(w, &v, sizeof v); }
void mbk_bytes_put_i64(mbk_bytes_writer *w, int64_t v) { mbk_bytes_put(w, &v, sizeof v); }
void mbk_bytes_put_f64(mbk_bytes_writer *w, double v) { mbk_bytes_put(w, &v, sizeof v); }

int mbk_bytes_writer_status(const mbk_bytes_writer *w)
{
    if (!w) return mbk_set_error(MBK_EINVAL, "mbk_bytes_writer_status: writer is NULL");
    if (!w->overrun) return MBK_OK;
    return mbk_set_error(MBK_EINVAL, "mbk_bytes_writer: the %zu bytes put do not fit in the capacity of %zu; "
                         "count them first with a writer on a NULL buffer", w->pos, w->capacity);
}

/* ------------------------------------------------------------------ */
/* Reader                                                               */
/* ------------------------------------------------------------------ */

mbk_bytes_reader mbk_bytes_reader_make(const void *buf, size_t size)
{
    return (mbk_bytes_reader){.buf = buf, .size = buf ? size : 0, .pos = 0, .overrun = false};
}

const void *mbk_bytes_get_span(mbk_bytes_reader *r, uint64_t n)
{
    /* one failed get fails every later one: the fields after it are not where they should be */
    if (r->overrun || n > r->size - r->pos) {
        r->overrun = true;
        return NULL;
    }
    const unsigned char *at = r->buf ? r->buf + r->pos : NULL; /* no offset on NULL: it is undefined */
    r->pos += (size_t)n;
    return at;
}

void mbk_bytes_get(mbk_bytes_reader *r, void *out, size_t n)
{
    const void *at = mbk_bytes_get_span(r, n);
    if (!n) return;
    if (at) memcpy(out, at, n);
    else memset(out, 0, n);
}

uint8_t mbk_bytes_get_u8(mbk_bytes_reader *r) { uint8_t v; mbk_bytes_get(r, &v, sizeof v); return v; }
uint32_t mbk_bytes_get_u32(mbk_bytes_reader *r) { uint32_t v; mbk_bytes_get(r, &v, sizeof v); return v; }
int32_t mbk_bytes_get_i32(mbk_bytes_reader *r) { int32_t v; mbk_bytes_get(r, &v, sizeof v); return v; }
uint64_t mbk_bytes_get_u64(mbk_bytes_reader *r) { uint64_t v; mbk_bytes_get(r, &v, sizeof v); return v; }
int64_t mbk_bytes_get_i64(mbk_bytes_reader *r) { int64_t v; mbk_bytes_get(r, &v, sizeof v); return v; }
double mbk_bytes_get_f64(mbk_bytes_reader *r) { double v; mbk_bytes_get(r, &v, sizeof v); return v; }

int mbk_bytes_reader_status(const mbk_bytes_reader *r)
{
    if (!r) return mbk_set_error(MBK_EINVAL, "mbk_bytes_reader_status: reader is NULL");
    if (!r->overrun) return MBK_OK;
    return mbk_set_error(MBK_EPARSE, "mbk_bytes_reader: the data is truncated: a field after byte %zu runs "
                         "past the end of the %zu bytes", r->pos, r->size);
}
