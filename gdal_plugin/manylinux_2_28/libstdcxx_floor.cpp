// Linked into the ChunkRef plugins for rasterio's wheels
// (scripts/build-rasterio-plugin.sh), which must use no libstdc++ symbol
// newer than GLIBCXX_3.4.25 (GCC 8's libstdc++, manylinux_2_28).
//
// GCC 11's and later headers call std::__throw_bad_array_new_length()
// (GLIBCXX_3.4.29) from std::allocator<T>::allocate when a count times
// sizeof(T) would overflow. This defines it inside the plugin, hidden (not
// exported, not interposed), as the gcc-toolset compilers of the manylinux
// images do with their static libstdc++_nonshared.a: the plugin then needs
// only the symbols of the older shared libstdc++. It throws what
// libstdc++'s own does; std::bad_array_new_length's type information and
// vtable are CXXABI_1.3.8 (GCC 4.9).
#include <new>

namespace std {
[[noreturn]] __attribute__((visibility("hidden"))) void __throw_bad_array_new_length();

void __throw_bad_array_new_length() { throw bad_array_new_length(); }
}  // namespace std
