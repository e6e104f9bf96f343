package io.nixlconnect.dynamo;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One response of a stream: Dynamo's {@code Annotated} envelope. Most workers send only {@link #data()}; the
 * others are the envelope's optional {@code id}, {@code event} and {@code comment}. An error event is never a
 * response: the stream throws it as a {@link DynamoWorkerException}.
 *
 * @param data     the worker's response, as plain values (see the package documentation)
 * @param id       the envelope's id, or null
 * @param event    the envelope's event name, or null
 * @param comments the envelope's comments (empty when none)
 */
public record DynamoResponse(@Nullable Object data, @Nullable String id, @Nullable String event, List<String> comments) {

    public DynamoResponse {
        comments = comments == null ? List.of() : List.copyOf(comments);
    }

    /** A response carrying only data. */
    public static DynamoResponse of(@Nullable Object data) {
        return new DynamoResponse(data, null, null, List.of());
    }
}
