/*
 * Exact unit-cost ordered tree edit distance (Zhang-Shasha), the hot loop of
 * tree_edit.distance.  Pure computation on int32 arrays prepared by
 * tree_edit/shape.py; runs without the GIL.
 *
 * tree_distance(codes1, lml1, keyroots1, codes2, lml2, keyroots2) -> int
 *
 *   codes:    label code of each node in postorder (equal codes = equal labels)
 *   lml:      postorder index of each node's leftmost leaf
 *   keyroots: ascending postorder indexes of the keyroots, the root last
 *
 * Every insert and delete costs 1, a rename costs 0 for equal codes and 1
 * otherwise.  The inputs are checked so that malformed arrays raise
 * ValueError instead of reading out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_buffer codes, lml, keyroots;
    Py_ssize_t n, nk;
} tree_arrays;

static int
get_int32(PyObject *obj, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 4 || view->format == NULL ||
        (strcmp(view->format, "i") != 0 && strcmp(view->format, "l") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be an array of 32-bit ints", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void
release(tree_arrays *t, int upto)
{
    if (upto > 0) PyBuffer_Release(&t->codes);
    if (upto > 1) PyBuffer_Release(&t->lml);
    if (upto > 2) PyBuffer_Release(&t->keyroots);
}

static int
load(tree_arrays *t, PyObject *codes, PyObject *lml, PyObject *keyroots)
{
    if (get_int32(codes, &t->codes, "codes") < 0) return -1;
    if (get_int32(lml, &t->lml, "lml") < 0) { release(t, 1); return -1; }
    if (get_int32(keyroots, &t->keyroots, "keyroots") < 0) { release(t, 2); return -1; }
    t->n = t->codes.len / 4;
    t->nk = t->keyroots.len / 4;
    const int32_t *l = t->lml.buf, *k = t->keyroots.buf;
    int ok = t->n > 0 && t->lml.len / 4 == t->n && t->nk > 0 && t->n < INT32_MAX / 2
             && k[t->nk - 1] == t->n - 1 && l[t->n - 1] == 0;
    for (Py_ssize_t i = 0; ok && i < t->n; i++)
        ok = l[i] >= 0 && l[i] <= i;
    for (Py_ssize_t i = 0; ok && i < t->nk; i++)
        ok = k[i] >= 0 && k[i] < t->n && (i == 0 || k[i] > k[i - 1]);
    /* every node of a keyroot's subtree has its leftmost leaf inside it */
    for (Py_ssize_t i = 0; ok && i < t->nk; i++)
        for (int32_t x = l[k[i]]; ok && x <= k[i]; x++)
            ok = l[x] >= l[k[i]];
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "malformed tree arrays");
        release(t, 3);
        return -1;
    }
    return 0;
}

/* One keyroot pair: fills the forest table fd (rows x cols, packed so that
 * small subproblems stay in cache) and the tree distances td (stride n2) of
 * the pairs on both leftmost paths.  off[dj-1] is the offset of column dj's
 * leftmost leaf from the keyroot's (0 = on the keyroot's leftmost path). */
static void
keyroot_pair(const int32_t *c1, const int32_t *l1, int32_t k1,
             const int32_t *c2, const int32_t j0, int32_t k2, const int32_t *off,
             int32_t *fd, int32_t *td, Py_ssize_t n2)
{
    const int32_t i0 = l1[k1];
    const int32_t rows = k1 - i0 + 1, cols = k2 - j0 + 1;
    const Py_ssize_t w = (Py_ssize_t)cols + 1;
    for (int32_t dj = 0; dj <= cols; dj++) fd[dj] = dj;
    for (int32_t di = 1; di <= rows; di++) {
        const int32_t i = i0 + di - 1, li = l1[i];
        int32_t *row = fd + di * w, *prev = row - w;
        int32_t *tdi = td + (Py_ssize_t)i * n2 + j0 - 1;   /* tdi[dj] = td[i][j] */
        const int32_t *left = fd + (Py_ssize_t)(li - i0) * w;
        const int32_t *c2j = c2 + j0 - 1;                   /* c2j[dj] = c2[j] */
        const int32_t ci = c1[i];
        row[0] = di;
        if (li == i0) {        /* i is on k1's leftmost path */
            for (int32_t dj = 1; dj <= cols; dj++) {
                int32_t best = (prev[dj] < row[dj - 1] ? prev[dj] : row[dj - 1]) + 1;
                int32_t v;
                if (off[dj - 1] == 0) {
                    v = prev[dj - 1] + (ci != c2j[dj]);
                    v = v < best ? v : best;
                    tdi[dj] = v;
                } else {
                    v = off[dj - 1] + tdi[dj];   /* left is row 0: left[x] == x */
                    v = v < best ? v : best;
                }
                row[dj] = v;
            }
        } else {
            for (int32_t dj = 1; dj <= cols; dj++) {
                int32_t best = (prev[dj] < row[dj - 1] ? prev[dj] : row[dj - 1]) + 1;
                int32_t v = left[off[dj - 1]] + tdi[dj];
                row[dj] = v < best ? v : best;
            }
        }
    }
}

static PyObject *
tree_distance(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *a[6];
    if (!PyArg_UnpackTuple(args, "tree_distance", 6, 6, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]))
        return NULL;
    tree_arrays t1, t2;
    if (load(&t1, a[0], a[1], a[2]) < 0) return NULL;
    if (load(&t2, a[3], a[4], a[5]) < 0) { release(&t1, 3); return NULL; }
    const Py_ssize_t n1 = t1.n, n2 = t2.n;
    int32_t *td = PyMem_RawCalloc((size_t)n1 * (size_t)n2, sizeof(int32_t));
    int32_t *fd = PyMem_RawMalloc((size_t)(n1 + 1) * (size_t)(n2 + 1) * sizeof(int32_t));
    const int32_t *c1 = t1.codes.buf, *l1 = t1.lml.buf, *k1 = t1.keyroots.buf;
    const int32_t *c2 = t2.codes.buf, *l2 = t2.lml.buf, *k2 = t2.keyroots.buf;
    /* offsets of tree 2's leftmost leaves, one segment per keyroot */
    Py_ssize_t total = 0;
    for (Py_ssize_t y = 0; y < t2.nk; y++) total += k2[y] - l2[k2[y]] + 1;
    int32_t *off = PyMem_RawMalloc((size_t)total * sizeof(int32_t));
    Py_ssize_t *start = PyMem_RawMalloc((size_t)t2.nk * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (td == NULL || fd == NULL || off == NULL || start == NULL) {
        PyErr_NoMemory();
    } else {
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t at = 0;
        for (Py_ssize_t y = 0; y < t2.nk; y++) {
            start[y] = at;
            for (int32_t j = l2[k2[y]]; j <= k2[y]; j++) off[at++] = l2[j] - l2[k2[y]];
        }
        for (Py_ssize_t x = 0; x < t1.nk; x++)
            for (Py_ssize_t y = 0; y < t2.nk; y++)
                keyroot_pair(c1, l1, k1[x], c2, l2[k2[y]], k2[y], off + start[y], fd, td, n2);
        Py_END_ALLOW_THREADS
        result = PyLong_FromLong(td[(size_t)n1 * (size_t)n2 - 1]);
    }
    PyMem_RawFree(td);
    PyMem_RawFree(fd);
    PyMem_RawFree(off);
    PyMem_RawFree(start);
    release(&t1, 3);
    release(&t2, 3);
    return result;
}

static PyMethodDef methods[] = {
    {"tree_distance", tree_distance, METH_VARARGS,
     "tree_distance(codes1, lml1, keyroots1, codes2, lml2, keyroots2) -> int\n\n"
     "Unit-cost Zhang-Shasha tree edit distance between two postorder-encoded trees."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tree_edit._ted",
    .m_doc = "C kernel of the exact tree edit distance (see tree_edit.distance).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__ted(void)
{
    return PyModule_Create(&module);
}
