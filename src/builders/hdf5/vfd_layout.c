/* The layout of libhdf5's H5FD_t and H5FD_class_t, which src/hdf5/vfd.rs
 * declares by hand for libhdf5 1.10 and for 1.14 and 2.x (CHUNKREF_VFD_LAYOUT,
 * 110 or 114, chosen by build.rs from H5public.h): a libhdf5 whose structures
 * differ fails the build here instead of misreading memory at run time.
 * vfd.rs checks its own declarations against the same numbers. */
#include <stddef.h>

#include "H5public.h"

#if CHUNKREF_VFD_LAYOUT == 110
#include "H5FDpublic.h"
_Static_assert(H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10,
               "build.rs chose the libhdf5 1.10 layout for another libhdf5");
#define CLASS_SIZE 280
#define CLASS_OPEN 112
#define CLASS_READ 200
#define CLASS_FL_MAP 248
#elif CHUNKREF_VFD_LAYOUT == 114
/* 1.14 moved the driver structures to H5FDdevelop.h; their class gained a
 * version, a value, vector and selection I/O, del and ctl. 2.x keeps them. */
#include "H5FDdevelop.h"
_Static_assert((H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 14) || H5_VERS_MAJOR == 2,
               "build.rs chose the libhdf5 1.14 layout for another libhdf5");
_Static_assert(H5FD_CLASS_VERSION == 1, "H5FD_class_t is not the version vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, value) == 4,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, ctl) == 296,
               "H5FD_class_t is not the layout vfd.rs declares");
#define CLASS_SIZE 336
#define CLASS_OPEN 120
#define CLASS_READ 208
#define CLASS_FL_MAP 304
#else
#error "CHUNKREF_VFD_LAYOUT must be 110 or 114 (set by build.rs)"
#endif

_Static_assert(sizeof(H5FD_t) == 80, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_t, maxaddr) == 40, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_t, paged_aggr) == 72, "H5FD_t is not the layout vfd.rs declares");
_Static_assert(sizeof(H5FD_class_t) == CLASS_SIZE,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, open) == CLASS_OPEN,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, read) == CLASS_READ,
               "H5FD_class_t is not the layout vfd.rs declares");
_Static_assert(offsetof(H5FD_class_t, fl_map) == CLASS_FL_MAP,
               "H5FD_class_t is not the layout vfd.rs declares");
