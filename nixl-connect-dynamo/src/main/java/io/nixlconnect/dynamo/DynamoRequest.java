package io.nixlconnect.dynamo;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/** A request a {@link DynamoHandler} serves. */
public interface DynamoRequest {

    /** The endpoint it was sent to. */
    EndpointId endpoint();

    /** Its id ({@code request-id}). */
    String requestId();

    /** The request, as plain values (see the package documentation). */
    @Nullable Object payload();

    /** The codec it came in; its responses go back in the same. */
    PayloadCodec codec();

    /** Its request-plane headers ({@code request-id}, {@code x-endpoint-path}, …). */
    Map<String, String> headers();

    /** Whether the caller asked to stop (Dynamo's {@code context.is_stopped()}): finish early. */
    boolean isStopped();

    /** Whether the caller dropped the request, or went away (Dynamo's {@code context.is_killed()}): nothing more is sent. */
    boolean isKilled();
}
