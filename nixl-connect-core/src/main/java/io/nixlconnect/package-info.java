/**
 * The nixl_connect API: a {@link io.nixlconnect.Connector} publishes local buffers ({@link io.nixlconnect.Descriptor})
 * as passive operations whose {@link io.nixlconnect.RdmaMetadata} a peer reads from or writes into, or moves bytes
 * itself from or into a peer's published buffers (active operations). Every exception it throws or reports is a
 * {@link io.nixlconnect.NixlConnectException}.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect;

import org.jspecify.annotations.NullMarked;
