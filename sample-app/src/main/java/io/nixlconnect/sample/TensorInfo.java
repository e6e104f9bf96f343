package io.nixlconnect.sample;

/** A tensor as the producer describes it: {@code GET /tensors/{name}}. */
public record TensorInfo(String name, long size, String device, String crc32c) {
}
