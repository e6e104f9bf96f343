package io.nixlconnect.dynamo.internal.codec;

import io.nixlconnect.dynamo.PayloadCodec;
import org.jspecify.annotations.Nullable;

/** Payloads in the codec a request names. */
public final class Payloads {

    private Payloads() {
    }

    public static byte[] encode(PayloadCodec codec, @Nullable Object value) {
        return codec == PayloadCodec.MSGPACK ? MsgpackValues.write(value) : JsonValues.write(value);
    }

    /** @throws io.nixlconnect.dynamo.DynamoProtocolException if the bytes are not one value in that codec */
    public static @Nullable Object decode(PayloadCodec codec, byte[] bytes, int offset, int length) {
        return codec == PayloadCodec.MSGPACK ? MsgpackValues.parse(bytes, offset, length)
                : JsonValues.parse(bytes, offset, length, Integer.MAX_VALUE);
    }
}
