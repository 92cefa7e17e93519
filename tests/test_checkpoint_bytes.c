/* Byte streams of checkpoint payloads (mbk/checkpoint.h: mbk_bytes_writer,
 * mbk_bytes_reader).
 *
 *   - the layout: a record of every field type is laid out as a hand-made
 *     reference (memcpy at the offsets docs/checkpoints.md gives) and a
 *     checkpoint container header written with the writer is the one
 *     mbk_checkpoint_pack makes;
 *   - a counting writer (buf NULL) gives the size the record needs;
 *   - round trip: every field comes back bit for bit, and a flipped byte in the
 *     bytes is seen (the comparison can fail);
 *   - bounds: a writer short of capacity writes nothing past it and reports
 *     MBK_EINVAL; the record truncated at every length reads as MBK_EPARSE with
 *     zeros, never past the end; a blob length of 2^64-1 is refused, not
 *     followed; a failed get fails every later one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbk/mbk.h>

#include "mbk_test.h"

/* One of every field the streams carry. */
typedef struct record {
    uint8_t flag;
    uint32_t count;
    int32_t index;
    uint64_t big;
    int64_t steps;
    double t;
    char blob[5];
} record;

static const record sample = {.flag = 1, .count = 0xA1B2C3D4u, .index = -7, .big = 0x0123456789ABCDEFull,
                              .steps = -1234567890123ll, .t = -0.1, .blob = "blob"};
enum { RECORD_BYTES = 1 + 4 + 4 + 8 + 8 + 8 + 8 + 5 }; /* the blob with its u64 length */

static void put_record(mbk_bytes_writer *w, const record *r)
{
    mbk_bytes_put_u8(w, r->flag);
    mbk_bytes_put_u32(w, r->count);
    mbk_bytes_put_i32(w, r->index);
    mbk_bytes_put_u64(w, r->big);
    mbk_bytes_put_i64(w, r->steps);
    mbk_bytes_put_f64(w, r->t);
    mbk_bytes_put_u64(w, sizeof r->blob);
    mbk_bytes_put(w, r->blob, sizeof r->blob);
}

/* The record back; the blob copied only when it is there in full. */
static void get_record(mbk_bytes_reader *r, record *out)
{
    memset(out, 0, sizeof *out);
    out->flag = mbk_bytes_get_u8(r);
    out->count = mbk_bytes_get_u32(r);
    out->index = mbk_bytes_get_i32(r);
    out->big = mbk_bytes_get_u64(r);
    out->steps = mbk_bytes_get_i64(r);
    out->t = mbk_bytes_get_f64(r);
    uint64_t n = mbk_bytes_get_u64(r);
    const void *blob = mbk_bytes_get_span(r, n);
    if (blob && n == sizeof out->blob) memcpy(out->blob, blob, sizeof out->blob);
}

static int same_record(const record *a, const record *b)
{
    return a->flag == b->flag && a->count == b->count && a->index == b->index && a->big == b->big &&
           a->steps == b->steps && memcmp(&a->t, &b->t, sizeof a->t) == 0 && memcmp(a->blob, b->blob, sizeof a->blob) == 0;
}

/* The record as docs/checkpoints.md lays it out, made without the streams. */
static void reference_bytes(const record *r, unsigned char *b)
{
    uint64_t blob_len = sizeof r->blob;
    size_t at = 0;
    memcpy(b + at, &r->flag, 1), at += 1;
    memcpy(b + at, &r->count, 4), at += 4;
    memcpy(b + at, &r->index, 4), at += 4;
    memcpy(b + at, &r->big, 8), at += 8;
    memcpy(b + at, &r->steps, 8), at += 8;
    memcpy(b + at, &r->t, 8), at += 8;
    memcpy(b + at, &blob_len, 8), at += 8;
    memcpy(b + at, r->blob, sizeof r->blob);
}

static void test_layout(void)
{
    mbk_bytes_writer count = mbk_bytes_writer_make(NULL, 0);
    put_record(&count, &sample);
    CHECK_INT(count.pos, RECORD_BYTES);
    CHECK(!count.overrun && mbk_bytes_writer_status(&count) == MBK_OK);

    unsigned char got[RECORD_BYTES], want[RECORD_BYTES];
    mbk_bytes_writer w = mbk_bytes_writer_make(got, sizeof got);
    put_record(&w, &sample);
    reference_bytes(&sample, want);
    CHECK(w.pos == sizeof got && mbk_bytes_writer_status(&w) == MBK_OK);
    CHECK(memcmp(got, want, sizeof got) == 0);

    /* a container header written field by field is the one mbk_checkpoint_pack makes */
    unsigned char packed[44], header[40];
    size_t n = 0;
    CHECK_INT(mbk_checkpoint_pack(9, 0xFEEDull, NULL, 0, packed, sizeof packed, &n), MBK_OK);
    const unsigned char magic[8] = {0x89, 'M', 'B', 'K', 0x0D, 0x0A, 0x1A, 0x0A};
    w = mbk_bytes_writer_make(header, sizeof header);
    mbk_bytes_put(&w, magic, sizeof magic);
    mbk_bytes_put_u32(&w, 0x01020304u);
    mbk_bytes_put_u32(&w, MBK_CHECKPOINT_VERSION);
    mbk_bytes_put_u32(&w, 9);
    mbk_bytes_put_u32(&w, 0);
    mbk_bytes_put_u64(&w, 0xFEEDull);
    mbk_bytes_put_u64(&w, 0);
    CHECK(n == sizeof packed && w.pos == sizeof header && memcmp(packed, header, sizeof header) == 0);
    printf("  layout: a %d-byte record as the reference lays it out; a container header as pack writes it\n",
           RECORD_BYTES);
}

static void test_round_trip(void)
{
    unsigned char b[RECORD_BYTES];
    mbk_bytes_writer w = mbk_bytes_writer_make(b, sizeof b);
    put_record(&w, &sample);
    record back;
    mbk_bytes_reader r = mbk_bytes_reader_make(b, sizeof b);
    get_record(&r, &back);
    CHECK(same_record(&back, &sample));
    CHECK(r.pos == sizeof b && mbk_bytes_reader_status(&r) == MBK_OK);
    /* planted: every flipped byte of the bytes shows in the record read back */
    int seen = 0;
    for (size_t i = 0; i < sizeof b; ++i) {
        b[i] ^= 0x10;
        r = mbk_bytes_reader_make(b, sizeof b);
        get_record(&r, &back);
        seen += !same_record(&back, &sample);
        b[i] ^= 0x10;
    }
    CHECK_INT(seen, RECORD_BYTES);
    printf("  round trip: every field bit for bit; %d of %d flipped bytes seen\n", seen, RECORD_BYTES);
}

static void test_writer_bounds(void)
{
    /* room for all but the last byte: the blob does not fit; nothing lands past the capacity */
    unsigned char b[RECORD_BYTES + 8];
    memset(b, 0xAA, sizeof b);
    mbk_bytes_writer w = mbk_bytes_writer_make(b, RECORD_BYTES - 1);
    put_record(&w, &sample);
    CHECK(w.overrun);
    CHECK_INT(w.pos, RECORD_BYTES); /* still the size the record needs */
    int untouched = 1;
    for (size_t i = RECORD_BYTES - 5; i < sizeof b; ++i) untouched &= b[i] == 0xAA;
    CHECK(untouched);
    CHECK_INT(mbk_bytes_writer_status(&w), MBK_EINVAL);
    CHECK(strstr(mbk_last_error(), "do not fit") != NULL);
    /* a space that does not fit is NULL; once overrun, later puts write nothing */
    CHECK(mbk_bytes_put_space(&w, 1) == NULL);
    unsigned char one = 0xAA;
    mbk_bytes_writer z = mbk_bytes_writer_make(&one, 0);
    CHECK(mbk_bytes_put_space(&z, 0) != NULL && !z.overrun);
    mbk_bytes_put_u8(&z, 1);
    CHECK(z.overrun && one == 0xAA);
    printf("  writer bounds: a put past the capacity writes nothing and reports MBK_EINVAL (%s)\n", mbk_last_error());
}

static void test_reader_bounds(void)
{
    unsigned char full[RECORD_BYTES];
    mbk_bytes_writer w = mbk_bytes_writer_make(full, sizeof full);
    put_record(&w, &sample);
    /* the record cut at every length, in a buffer of exactly that size (ASan sees any read past it) */
    int refused = 0;
    for (size_t len = 0; len < sizeof full; ++len) {
        unsigned char *cut = malloc(len ? len : 1);
        if (!CHECK(cut)) return;
        memcpy(cut, full, len);
        mbk_bytes_reader r = mbk_bytes_reader_make(cut, len);
        record back;
        get_record(&r, &back);
        refused += r.overrun && r.pos <= len && mbk_bytes_reader_status(&r) == MBK_EPARSE;
        free(cut);
    }
    CHECK_INT(refused, RECORD_BYTES);
    CHECK(strstr(mbk_last_error(), "truncated") != NULL);
    /* the fields before the cut come back, those after are zeros */
    mbk_bytes_reader r = mbk_bytes_reader_make(full, 9);
    record back;
    get_record(&r, &back);
    CHECK(back.flag == sample.flag && back.count == sample.count && back.index == sample.index);
    CHECK(back.big == 0 && back.steps == 0 && back.t == 0 && back.blob[0] == 0);
    /* a blob length no data can have is refused, not followed; a failed get fails every later one */
    unsigned char bad[RECORD_BYTES];
    memcpy(bad, full, sizeof bad);
    uint64_t huge = UINT64_MAX;
    memcpy(bad + RECORD_BYTES - 5 - 8, &huge, sizeof huge);
    r = mbk_bytes_reader_make(bad, sizeof bad);
    get_record(&r, &back);
    CHECK(r.overrun && back.blob[0] == 0 && mbk_bytes_reader_status(&r) == MBK_EPARSE);
    CHECK(mbk_bytes_get_span(&r, 0) == NULL && mbk_bytes_get_u8(&r) == 0);
    /* a reader of nothing */
    r = mbk_bytes_reader_make(NULL, 100);
    CHECK(r.size == 0 && mbk_bytes_get_u32(&r) == 0 && r.overrun);
    printf("  reader bounds: cut at each of %d lengths, read as MBK_EPARSE (%s)\n", RECORD_BYTES, mbk_last_error());
    CHECK_INT(mbk_bytes_reader_status(NULL), MBK_EINVAL);
}

int main(void)
{
    test_layout();
    test_round_trip();
    test_writer_bounds();
    test_reader_bounds();
    return mbk_test_finish();
}
