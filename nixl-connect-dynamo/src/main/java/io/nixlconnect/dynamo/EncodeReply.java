package io.nixlconnect.dynamo;

import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.dynamo.internal.codec.Values;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The reply of Dynamo's TRT-LLM encode worker ({@code dynamo/trtllm/encode_helper.py}): where to read the embeddings
 * tensor from and what it is. A worker yields it as
 * {@code {"nixl_readable_metadata": RdmaMetadata.model_dump(), "embeddings_shape": [...], "embeddings_dtype":
 * "torch.float16", "auxiliary_data": {...}}}; its reader allocates {@code shape} of {@code dtype}, reads it with the
 * metadata, and takes the auxiliary tensors from {@code auxiliary_data}.
 *
 * @param nixlReadableMetadata the readable operation's metadata
 * @param embeddingsShape      the tensor's shape (each dimension at least 0)
 * @param embeddingsDtype      its dtype as torch writes it, for example {@code "torch.float16"} or {@code "torch.uint8"}
 * @param auxiliaryData        the auxiliary tensors and values ({@code serialize_tensor_dict}: a tensor is
 *                             {@code {"data": [...], "shape": [...], "dtype": "torch.int64"}}); an empty map when none
 */
public record EncodeReply(RdmaMetadata nixlReadableMetadata, List<Long> embeddingsShape, String embeddingsDtype,
        Map<String, Object> auxiliaryData) {

    public EncodeReply {
        if (nixlReadableMetadata == null) {
            throw new IllegalArgumentException("nixlReadableMetadata must not be null");
        }
        if (embeddingsShape == null) {
            throw new IllegalArgumentException("embeddingsShape must not be null");
        }
        for (Long dimension : embeddingsShape) {
            if (dimension == null || dimension < 0) {
                throw new IllegalArgumentException("embeddingsShape dimensions must be >= 0, were " + embeddingsShape);
            }
        }
        embeddingsShape = List.copyOf(embeddingsShape);
        if (embeddingsDtype == null || embeddingsDtype.isBlank()) {
            throw new IllegalArgumentException("embeddingsDtype must not be blank");
        }
        auxiliaryData = auxiliaryData == null ? Map.of()
                : Collections.unmodifiableMap(new LinkedHashMap<>(auxiliaryData));
    }

    /** A reply for a flat tensor of {@code bytes} bytes of {@code torch.uint8} with no auxiliary data. */
    public static EncodeReply ofBytes(RdmaMetadata metadata, long bytes) {
        return new EncodeReply(metadata, List.of(bytes), "torch.uint8", Map.of());
    }

    /** The number of elements the shape holds (1 for a scalar's empty shape). */
    public long elementCount() {
        long count = 1;
        for (long dimension : embeddingsShape) {
            count = Math.multiplyExact(count, dimension);
        }
        return count;
    }

    /** The reply as the worker yields it (keys in its order). */
    public Map<String, Object> toValue() {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("nixl_readable_metadata", DynamoValues.fromRdmaMetadata(nixlReadableMetadata));
        value.put("embeddings_shape", new ArrayList<>(embeddingsShape));
        value.put("embeddings_dtype", embeddingsDtype);
        value.put("auxiliary_data", Values.normalize(auxiliaryData));
        return value;
    }

    /**
     * Reads a reply as the encode worker's reader does: an {@code "error"} key is the worker's error; the metadata is
     * checked by every rule of {@link RdmaMetadata}; a missing {@code auxiliary_data} is empty.
     *
     * @throws DynamoWorkerException   if the reply carries {@code "error"}
     * @throws DynamoProtocolException if a field is missing or of the wrong type
     * @throws InvalidMetadataException if the metadata breaks a rule (naming the field)
     */
    public static EncodeReply fromValue(@Nullable Object value) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new DynamoProtocolException("an encode reply must be a map, was " + Values.describe(value));
        }
        if (map.containsKey("error")) {
            String error = String.valueOf(map.get("error"));
            throw new DynamoWorkerException("the encode worker answered with an error: " + error, error, null);
        }
        if (!map.containsKey("nixl_readable_metadata")) {
            throw new DynamoProtocolException("an encode reply needs nixl_readable_metadata");
        }
        RdmaMetadata metadata = DynamoValues.toRdmaMetadata(map.get("nixl_readable_metadata"));
        Object shape = map.get("embeddings_shape");
        if (!(shape instanceof List<?> dimensions)) {
            throw new DynamoProtocolException("embeddings_shape must be a list of integers, was " + Values.describe(shape));
        }
        List<Long> shapeList = new ArrayList<>(dimensions.size());
        for (Object dimension : dimensions) {
            if (!(dimension instanceof Long number) || number < 0) {
                throw new DynamoProtocolException("embeddings_shape must be a list of integers >= 0, was " + shape);
            }
            shapeList.add(number);
        }
        Object dtype = map.get("embeddings_dtype");
        if (!(dtype instanceof String dtypeText) || dtypeText.isBlank()) {
            throw new DynamoProtocolException("embeddings_dtype must be a string, was " + Values.describe(dtype));
        }
        Object auxiliary = map.get("auxiliary_data");
        Map<String, Object> auxiliaryMap = new LinkedHashMap<>();
        if (auxiliary instanceof Map<?, ?> entries) {
            for (Map.Entry<?, ?> entry : entries.entrySet()) {
                auxiliaryMap.put(String.valueOf(entry.getKey()), entry.getValue());
            }
        } else if (auxiliary != null) {
            throw new DynamoProtocolException("auxiliary_data must be a map, was " + Values.describe(auxiliary));
        }
        return new EncodeReply(metadata, shapeList, dtypeText, auxiliaryMap);
    }
}
