/**
 * GPU memory through the CUDA driver API (JCuda, an optional dependency).
 *
 * <p>Start at {@link io.nixlconnect.cuda.Cuda}: {@code Cuda.availability()} says whether CUDA is usable
 * and, if not, why; {@code Cuda.open()} returns the {@link io.nixlconnect.cuda.CudaMemory} service for
 * devices, {@link io.nixlconnect.cuda.CudaDeviceBuffer device buffers},
 * {@link io.nixlconnect.cuda.PinnedHostBuffer pinned host buffers} and raw-address copies.
 * {@link io.nixlconnect.cuda.CudaStaging} carries the raw-address copies a socket transport needs.
 *
 * <p>Nothing here loads JCuda until one of those is called; without JCuda, a driver or a device the
 * answer is a reason in words or a {@link io.nixlconnect.cuda.CudaUnavailableException}, never a crash.
 * Every call runs in the primary context of the device the memory lives on, pushed onto the calling
 * thread's context stack for the call and popped after (never replacing the caller's own context), so
 * buffers move freely between threads; {@link io.nixlconnect.cuda.CudaMemory#enterDevice} does the same
 * for native code an application calls itself.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect.cuda;

import org.jspecify.annotations.NullMarked;
