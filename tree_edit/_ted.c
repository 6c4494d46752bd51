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
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "malformed tree arrays");
        release(t, 3);
        return -1;
    }
    return 0;
}

/* One keyroot pair: fills the forest table fd (stride w) and the tree
 * distances td (stride n2) of the pairs on both leftmost paths.
 * Returns -1 when a leftmost leaf falls outside its keyroot's subtree. */
static int
keyroot_pair(const int32_t *c1, const int32_t *l1, int32_t k1,
             const int32_t *c2, const int32_t *l2, int32_t k2,
             int32_t *fd, Py_ssize_t w, int32_t *td, Py_ssize_t n2)
{
    const int32_t i0 = l1[k1], j0 = l2[k2];
    const int32_t rows = k1 - i0 + 1, cols = k2 - j0 + 1;
    for (int32_t dj = 0; dj <= cols; dj++) fd[dj] = dj;
    for (int32_t di = 1; di <= rows; di++) {
        const int32_t i = i0 + di - 1, li = l1[i];
        if (li < i0) return -1;
        int32_t *row = fd + di * w, *prev = row - w, *tdi = td + (Py_ssize_t)i * n2;
        const int32_t *left = fd + (Py_ssize_t)(li - i0) * w;
        const int32_t ci = c1[i];
        row[0] = di;
        for (int32_t dj = 1; dj <= cols; dj++) {
            const int32_t j = j0 + dj - 1, lj = l2[j];
            if (lj < j0) return -1;
            int32_t best = (prev[dj] < row[dj - 1] ? prev[dj] : row[dj - 1]) + 1;
            if (li == i0 && lj == j0) {
                int32_t v = prev[dj - 1] + (ci != c2[j]);
                row[dj] = tdi[j] = v < best ? v : best;
            } else {
                int32_t v = left[lj - j0] + tdi[j];
                row[dj] = v < best ? v : best;
            }
        }
    }
    return 0;
}

static PyObject *
tree_distance(PyObject *self, PyObject *args)
{
    PyObject *a[6];
    if (!PyArg_UnpackTuple(args, "tree_distance", 6, 6, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]))
        return NULL;
    tree_arrays t1, t2;
    if (load(&t1, a[0], a[1], a[2]) < 0) return NULL;
    if (load(&t2, a[3], a[4], a[5]) < 0) { release(&t1, 3); return NULL; }
    const Py_ssize_t n1 = t1.n, n2 = t2.n, w = n2 + 1;
    int32_t *td = PyMem_RawCalloc((size_t)n1 * (size_t)n2, sizeof(int32_t));
    int32_t *fd = PyMem_RawMalloc((size_t)(n1 + 1) * (size_t)w * sizeof(int32_t));
    PyObject *result = NULL;
    if (td == NULL || fd == NULL) {
        PyErr_NoMemory();
    } else {
        int status = 0;
        const int32_t *c1 = t1.codes.buf, *l1 = t1.lml.buf, *k1 = t1.keyroots.buf;
        const int32_t *c2 = t2.codes.buf, *l2 = t2.lml.buf, *k2 = t2.keyroots.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t x = 0; status == 0 && x < t1.nk; x++)
            for (Py_ssize_t y = 0; status == 0 && y < t2.nk; y++)
                status = keyroot_pair(c1, l1, k1[x], c2, l2, k2[y], fd, w, td, n2);
        Py_END_ALLOW_THREADS
        if (status == 0)
            result = PyLong_FromLong(td[(size_t)n1 * (size_t)n2 - 1]);
        else
            PyErr_SetString(PyExc_ValueError, "malformed tree arrays");
    }
    PyMem_RawFree(td);
    PyMem_RawFree(fd);
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
    PyModuleDef_HEAD_INIT, "tree_edit._ted",
    "C kernel of the exact tree edit distance (see tree_edit.distance).", -1, methods,
};

PyMODINIT_FUNC
PyInit__ted(void)
{
    return PyModule_Create(&module);
}
