/**
 * The NIXL backend, through JNA over {@code libnixl_capi.so}. Public: only its settings
 * ({@link io.nixlconnect.transport.nixl.NixlSettings}) and its provider.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect.transport.nixl;

import org.jspecify.annotations.NullMarked;
