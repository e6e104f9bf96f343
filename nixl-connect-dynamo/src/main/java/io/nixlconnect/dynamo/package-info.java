/**
 * A Java member of a Dynamo 1.6 deployment: a {@link io.nixlconnect.dynamo.DynamoRuntime} finds endpoints through
 * Dynamo's discovery (file or etcd), calls them over Dynamo's TCP request plane ({@link
 * io.nixlconnect.dynamo.DynamoClient}, responses as a {@link io.nixlconnect.dynamo.ResponseStream}) and serves its own
 * ({@link io.nixlconnect.dynamo.DynamoHandler}), with JSON or msgpack payloads. Payloads are plain values, as a Python
 * worker sees them: {@code Map}, {@code List}, {@code String}, {@code Long}, {@code Double}, {@code Boolean},
 * {@code byte[]}, {@code null}; {@link io.nixlconnect.dynamo.DynamoValues} turns {@link io.nixlconnect.RdmaMetadata}
 * into and out of them, {@link io.nixlconnect.dynamo.EncodeReply} the encode worker's reply. Every failure is a
 * {@link io.nixlconnect.dynamo.DynamoException}, itself a {@link io.nixlconnect.NixlConnectException}.
 *
 * <p>Null-marked: nothing is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.nixlconnect.dynamo;

import org.jspecify.annotations.NullMarked;
