/* The layout of libhdf5's H5FD_t and H5FD_class_t, which src/hdf5/vfd.rs
 * declares by hand for libhdf5 1.10: a libhdf5 whose structures differ
 * fails the build here instead of misreading memory at run time. vfd.rs
 * checks its own declarations against the same numbers. */
#include <stddef.h>

#include "H5FDpublic.h"

_Static_assert(sizeof(H5FD_t) == 80, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_t, maxaddr) == 40, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_t, paged_aggr) == 72, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(sizeof(H5FD_class_t) == 280, "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, open) == 112,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, read) == 200,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, fl_map) == 248,
               "H5FD_class_t is not the layout vfd.rs declares");
