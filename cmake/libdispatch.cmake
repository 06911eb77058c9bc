# Finds the libdispatch that ships with the Swift toolchain (headers, libdispatch.so and
# libBlocksRuntime.so next to the swift binary), for the side-by-side benchmarks.
find_program(CQ_SWIFT swift)
set(CQ_LIBDISPATCH_FOUND OFF)
if(CQ_SWIFT)
  get_filename_component(_swift_real ${CQ_SWIFT} REALPATH)
  get_filename_component(_swift_bin ${_swift_real} DIRECTORY)
  get_filename_component(_swift_usr ${_swift_bin} DIRECTORY)
  set(CQ_DISPATCH_INCLUDE ${_swift_usr}/lib/swift)
  set(CQ_DISPATCH_LIBDIR ${_swift_usr}/lib/swift/linux)
  if(EXISTS ${CQ_DISPATCH_INCLUDE}/dispatch/dispatch.h AND EXISTS ${CQ_DISPATCH_LIBDIR}/libdispatch.so)
    set(CQ_LIBDISPATCH_FOUND ON)
  endif()
endif()
