/* The derivatives' work space (mt_dws): its sections' layout, computed once at
 * Topology, and the pointers into a State's copy of it (matter_deriv.h lists the
 * files that use it). */
#include "matter_deriv.h"

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }
static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Byte offsets of the sections (and the total): header, bodies, q columns, u
   columns, rows, dS, a shared region, the sparse factor and the solve's block. The
   shared region holds either the sweep's column arrays (qs, us: alive only inside
   mt_deriv_sweep) or the scratch spatial vectors and vectors (sp, vec: used before
   the sweep by the numeric pieces and after it by the solve), never both at once.
   Without the sparse factor, its place holds the articulated-body solve's z and A
   of the fed bodies for ABA_GROUPS groups of columns (aba_columns). */
static size_t dws_layout(const mbk_matter *m, size_t off[10], int *vlen)
{
    size_t nb = (size_t)m->nb, nu = (size_t)m->nu + 1, nq = (size_t)m->nqmax + 1;
    *vlen = m->nqmax + m->nu + 1;
    const size_t scratch = round64(2 * nb * sizeof(mbk_spatial_vec)) + MT_DWS_NVEC * (size_t)*vlen * sizeof(double);
    const size_t columns = round64(MT_QS * round8((size_t)m->nqmax) * sizeof(double)) +
                           MT_US * round8((size_t)m->nu) * sizeof(double);
    const size_t sizes[9] = {sizeof(mt_dhdr), nb * sizeof(mt_dbody), nq * sizeof(mt_dcol), nu * sizeof(mt_ducol),
                             nu * sizeof(mt_drow), ((size_t)m->nds + 1) * sizeof(mbk_spatial_vec),
                             scratch > columns ? scratch : columns,
                             m->ltdl ? (2 * (size_t)m->nl + nu) * sizeof(double)
                                     : 2 * (size_t)m->nfed * ABA_GROUPS * sizeof(mt_sv8),
                             m->ltdl ? ((size_t)m->nu * (size_t)block_width(m) + 8) * sizeof(double) : 0};
    size_t o = 0;
    for (int i = 0; i < 9; ++i) {
        off[i] = o;
        o += round64(sizes[i]);
    }
    off[9] = o;
    return o;
}

size_t mt_dws_bytes(mbk_matter *m)
{
    return dws_layout(m, m->dws_off, &m->dws_vlen);
}

mt_dws mt_dws_of(const mbk_matter *m, const mbk_state *s)
{
    const size_t *off = m->dws_off;
    mt_dws w;
    w.vlen = m->dws_vlen;
    char *b = mt_cache(m, s, C_SCRATCH_MAT);
    w.body = (mt_dbody *)(b + off[1]);
    w.qcol = (mt_dcol *)(b + off[2]);
    w.ucol = (mt_ducol *)(b + off[3]);
    w.row = (mt_drow *)(b + off[4]);
    w.dS = (mbk_spatial_vec *)(b + off[5]);

    /* the shared region: sp and vec, or qs and us */
    w.sp = (mbk_spatial_vec *)(b + off[6]);
    w.vec = (double *)(b + off[6] + round64(2 * (size_t)m->nb * sizeof(mbk_spatial_vec)));
    w.qs = (double *)(b + off[6]);
    w.us = (double *)(b + off[6] + round64(MT_QS * round8((size_t)m->nqmax) * sizeof(double)));
    const mt_dhdr *h = (const mt_dhdr *)b;
    w.numeric = h->numeric;
    w.with_velocity = h->with_velocity != 0;
    return w;
}
