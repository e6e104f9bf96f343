package io.nixlconnect.sample;

/** What the producer found in a writable buffer once the peer's write completed: {@code GET /tensors/{name}/checksum}. */
public record WriteReport(String name, long size, String status, String crc32c) {
}
