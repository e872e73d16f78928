/* The ChunkRef plugins for rasterio's wheels (scripts/build-rasterio-plugin.sh)
 * are compiled by zig against glibc 2.28's headers, with GCC's libstdc++
 * headers in front of them. libstdc++'s ext/atomicity.h reads glibc's
 * __libc_single_threaded (new in glibc 2.32) whenever <sys/single_threaded.h>
 * exists; zig's copy of that header exists for every glibc it targets and
 * refuses to compile below 2.32. This one, ahead of zig's on the include
 * path, stands in: 0 means "maybe multi-threaded", so reference counts are
 * always atomic, as libstdc++ does on a glibc without the variable. */
#ifndef CHUNKREF_SYS_SINGLE_THREADED_H
#define CHUNKREF_SYS_SINGLE_THREADED_H
static const char __libc_single_threaded = 0;
#endif
