/**
 * The transport SPI: what a backend (the embedded pure-Java transport, NIXL through JNA) implements.
 *
 * <p>Applications never call this package; they use {@link io.nixlconnect.Connector}. The model is
 * NIXL's own: an {@link io.nixlconnect.transport.TransportAgent agent} registers memory, publishes
 * its metadata, loads remote agents from theirs, and posts one-sided READ or WRITE transfers of
 * descriptor-list pairs with a notification; the passive side learns of completion from that
 * notification, dispatched by key to a {@link io.nixlconnect.transport.PassiveWindow}.
 *
 * <p>Every method here is thread-safe. Completion is signalled through futures, never by polling
 * in the caller's thread.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect.transport;

import org.jspecify.annotations.NullMarked;
