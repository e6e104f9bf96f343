/**
 * The embedded transport: pure Java, over TCP, on any machine. It mirrors NIXL's one-sided model with a
 * small request/response protocol ({@link io.nixlconnect.transport.embedded.Wire}): the active side asks the
 * passive side's server to stream registered bytes (READ) or to accept them (WRITE), then delivers the
 * notification once the data has landed. The server only touches memory inside live passive windows.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect.transport.embedded;

import org.jspecify.annotations.NullMarked;
