package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.InvalidAgentMetadataException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * NIXL's agent metadata blob, read in Java: {@link #validate} checks a peer's blob completely before
 * it reaches {@code nixl_capi_load_remote_md} (NIXL trusts it: an out-of-range memory type crashed the
 * loading process in {@code nixlMemSection::emplace}), and {@link #agentName} reads the name when NIXL
 * refuses a blob (it then reports no name) and the agent must decide whether to replace a peer.
 *
 * <p>The blob is NIXL's {@code nixlSerDes} encoding (NIXL 1.x {@code nixlAgentData::getLocalMD}):
 * {@code "nixlSerDes|"}, then fields, each {@code tag, uint64 length (little-endian), bytes, '|'}:
 * <pre>
 * Agent=name  Conns=uint64 n  n x (t=backend c=connection-info)  ""="MemSection"
 * nixlSecElms=uint64 s  s x (bknd=backend  nixlDList="nixlSDList"  t=uint32 memory-type  n=uint64 d
 *                            d x ""=(uint64 addr, uint64 len, uint64 devId, backend key bytes))
 * </pre>
 * docs/nixl.md lists what NIXL itself does not check.
 */
final class NixlMetadataFormat {

    private static final byte[] HEADER = "nixlSerDes|".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] AGENT_TAG = "Agent".getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_NAME_BYTES = 4096;

    static final int MAX_BACKENDS = 16;
    static final int MAX_BACKEND_NAME_BYTES = 64;
    static final int MAX_CONNECTION_INFO_BYTES = 64 * 1024;
    static final int MAX_SECTIONS = 64;
    static final int MAX_DESCRIPTORS = 1 << 20;
    static final int MAX_KEY_BYTES = 64 * 1024;
    static final int BASIC_DESC_BYTES = 3 * Long.BYTES;
    /** NIXL's {@code nixl_mem_t} values this library registers and loads: DRAM_SEG, VRAM_SEG. */
    static final int MEM_DRAM = 0;
    static final int MEM_VRAM = 1;
    static final int MAX_DEVICE_ID = 1 << 16;
    /** The backend whose connection info and keys are UCX's packed formats ({@link UcxPackedFormats}). */
    static final String UCX = "UCX";

    private NixlMetadataFormat() {
    }

    /** One descriptor of a peer's memory section, as NIXL would load it. */
    record Region(int memoryType, String backend, long address, long length, long deviceId) {
    }

    /** A validated blob: the agent name, its backends and its regions. */
    record Parsed(String agent, List<String> backends, List<Region> regions) {
    }

    /**
     * Parses and checks a whole blob; anything NIXL could mis-handle is refused.
     *
     * @throws InvalidAgentMetadataException naming the first offending field
     */
    static Parsed validate(byte[] metadata) {
        Reader in = new Reader(metadata);
        in.expect(HEADER, "header", "does not start with \"nixlSerDes|\"");
        String agent = in.text("Agent", "Agent", 1, MAX_NAME_BYTES);
        if (agent.indexOf('\0') >= 0) {
            throw new InvalidAgentMetadataException("Agent", "contains a NUL character");
        }
        long connections = in.uint64Field("Conns", "Conns");
        if (connections < 1 || connections > MAX_BACKENDS) {
            throw new InvalidAgentMetadataException("Conns", "must count 1 to " + MAX_BACKENDS + " backends, was "
                    + Long.toUnsignedString(connections));
        }
        List<String> backends = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            String backend = backendName(in.text("t", "Conns[" + i + "].t", 1, MAX_BACKEND_NAME_BYTES),
                    "Conns[" + i + "].t");
            if (backends.contains(backend)) {
                throw new InvalidAgentMetadataException("Conns[" + i + "].t", "repeats backend '" + backend + "'");
            }
            backends.add(backend);
            ByteBuffer connectionInfo = in.bytes("c", "Conns[" + i + "].c", 1, MAX_CONNECTION_INFO_BYTES);
            if (backend.equals(UCX)) {
                UcxPackedFormats.validateWorkerAddress(connectionInfo, "Conns[" + i + "].c");
            }
        }
        String marker = in.text("", "MemSection", 1, 16);
        if (!marker.equals("MemSection")) {
            throw new InvalidAgentMetadataException("MemSection", "marker is missing");
        }
        long sections = in.uint64Field("nixlSecElms", "nixlSecElms");
        if (sections < 0 || sections > MAX_SECTIONS) {
            throw new InvalidAgentMetadataException("nixlSecElms", "must count 0 to " + MAX_SECTIONS
                    + " sections, was " + Long.toUnsignedString(sections));
        }
        List<Region> regions = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (int s = 0; s < sections; s++) {
            String at = "MemSection[" + s + "]";
            String backend = backendName(in.text("bknd", at + ".bknd", 1, MAX_BACKEND_NAME_BYTES), at + ".bknd");
            if (!backends.contains(backend)) {
                throw new InvalidAgentMetadataException(at + ".bknd", "names backend '" + backend
                        + "' that the metadata gives no connection for");
            }
            String listType = in.text("nixlDList", at + ".nixlDList", 1, 16);
            if (!listType.equals("nixlSDList")) {
                throw new InvalidAgentMetadataException(at + ".nixlDList", "must be \"nixlSDList\"");
            }
            long memoryType = in.uint32Field("t", at + ".t");
            if (memoryType != MEM_DRAM && memoryType != MEM_VRAM) {
                throw new InvalidAgentMetadataException(at + ".t", "is memory type " + memoryType
                        + "; only DRAM (0) and VRAM (1) are accepted");
            }
            if (!seen.add(backend + "/" + memoryType)) {
                throw new InvalidAgentMetadataException(at, "repeats the section of backend '" + backend
                        + "' and memory type " + memoryType);
            }
            long count = in.uint64Field("n", at + ".n");
            if (count < 1 || count > MAX_DESCRIPTORS) {
                throw new InvalidAgentMetadataException(at + ".n", "must count 1 to " + MAX_DESCRIPTORS
                        + " descriptors, was " + Long.toUnsignedString(count));
            }
            for (int d = 0; d < count; d++) {
                String field = at + ".descs[" + d + "]";
                ByteBuffer desc = in.bytes("", field, BASIC_DESC_BYTES + 1, BASIC_DESC_BYTES + MAX_KEY_BYTES);
                long address = desc.getLong();
                long length = desc.getLong();
                long deviceId = desc.getLong();
                if (address == 0) {
                    throw new InvalidAgentMetadataException(field + ".addr", "is 0");
                }
                // Length 0 is what a real peer publishes: dynamo.nixl_connect registers zero-length descriptors
                // with NIXL (1.6.1, Descriptor.register_with_connector), and its agent metadata then carries them.
                if (Long.compareUnsigned(length, -address) > 0) {
                    throw new InvalidAgentMetadataException(field + ".len", "must end inside the address"
                            + " space, was " + Long.toUnsignedString(length) + " at " + Long.toUnsignedString(address));
                }
                if (deviceId < 0 || deviceId > MAX_DEVICE_ID || memoryType == MEM_DRAM && deviceId != 0) {
                    throw new InvalidAgentMetadataException(field + ".devId", "is " + Long.toUnsignedString(deviceId)
                            + (memoryType == MEM_DRAM ? "; host memory has device 0" : "; out of range"));
                }
                if (backend.equals(UCX)) {
                    UcxPackedFormats.validateRemoteKey(desc, (int) memoryType, field + ".key");
                }
                regions.add(new Region((int) memoryType, backend, address, length, deviceId));
            }
        }
        if (in.remaining() != 0) {
            throw new InvalidAgentMetadataException("end", in.remaining() + " byte(s) follow the last section");
        }
        return new Parsed(agent, List.copyOf(backends), List.copyOf(regions));
    }

    /**
     * One memory section of this agent's own metadata: its backend, memory type and descriptors, each descriptor the
     * raw value NIXL wrote (address, length, device id, backend key), kept to be written out again.
     */
    record Section(String backend, int memoryType, List<byte[]> descriptors) {
    }

    /**
     * The part of one of this agent's blobs before its memory sections: header, agent name and connection info
     * (NIXL fixes these when the agent's backends are created). The bytes up to the {@code "MemSection"} marker.
     */
    static byte[] connectionPart(byte[] blob) {
        Reader in = new Reader(blob);
        readConnections(in);
        return java.util.Arrays.copyOf(blob, blob.length - in.remaining());
    }

    /**
     * The memory sections of one of this agent's own blobs, full or partial ({@code nixl_capi_get_local_partial_md},
     * which gives no connection info).
     */
    static List<Section> sections(byte[] blob) {
        Reader in = new Reader(blob);
        readConnections(in);
        in.text("", "MemSection", 1, 16);
        long count = in.uint64Field("nixlSecElms", "nixlSecElms");
        List<Section> sections = new ArrayList<>();
        for (long s = 0; s < count; s++) {
            String at = "MemSection[" + s + "]";
            String backend = in.text("bknd", at + ".bknd", 1, MAX_BACKEND_NAME_BYTES);
            in.text("nixlDList", at + ".nixlDList", 1, 16);
            int memoryType = (int) in.uint32Field("t", at + ".t");
            long n = in.uint64Field("n", at + ".n");
            List<byte[]> descriptors = new ArrayList<>();
            for (long d = 0; d < n; d++) {
                ByteBuffer desc = in.bytes("", at + ".descs[" + d + "]", BASIC_DESC_BYTES, BASIC_DESC_BYTES + MAX_KEY_BYTES);
                byte[] raw = new byte[desc.remaining()];
                desc.get(raw);
                descriptors.add(raw);
            }
            sections.add(new Section(backend, memoryType, List.copyOf(descriptors)));
        }
        return List.copyOf(sections);
    }

    /** Header, agent name and connections, read past; validated blobs only come from this agent's own NIXL. */
    private static void readConnections(Reader in) {
        in.expect(HEADER, "header", "does not start with \"nixlSerDes|\"");
        in.text("Agent", "Agent", 1, MAX_NAME_BYTES);
        long connections = in.uint64Field("Conns", "Conns");
        if (connections < 0 || connections > MAX_BACKENDS) {
            throw new InvalidAgentMetadataException("Conns", "counts " + Long.toUnsignedString(connections) + " backends");
        }
        for (int i = 0; i < connections; i++) {
            in.text("t", "Conns[" + i + "].t", 1, MAX_BACKEND_NAME_BYTES);
            in.bytes("c", "Conns[" + i + "].c", 1, MAX_CONNECTION_INFO_BYTES);
        }
    }

    /**
     * A blob as NIXL's {@code getLocalMD} writes it, from {@code connectionPart} and the given sections only: sections
     * of one backend and memory type merged into one, their descriptors in NIXL's order (device, address, length)
     * and each once. What a peer needs to reach the regions of these sections, whatever else the agent registered.
     */
    static byte[] assemble(byte[] connectionPart, List<Section> sections) {
        java.util.Map<String, List<byte[]>> merged = new java.util.LinkedHashMap<>();
        java.util.Map<String, Section> first = new java.util.HashMap<>();
        for (Section section : sections) {
            String key = section.backend() + "/" + section.memoryType();
            first.putIfAbsent(key, section);
            merged.computeIfAbsent(key, k -> new ArrayList<>()).addAll(section.descriptors());
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(connectionPart.length + 256);
        out.writeBytes(connectionPart);
        field(out, "", "MemSection".getBytes(StandardCharsets.US_ASCII));
        field(out, "nixlSecElms", littleEndian(merged.size(), Long.BYTES));
        for (java.util.Map.Entry<String, List<byte[]>> entry : merged.entrySet()) {
            Section section = first.get(entry.getKey());
            List<byte[]> descriptors = new ArrayList<>(entry.getValue());
            descriptors.sort(NixlMetadataFormat::compareDescriptors);
            List<byte[]> distinct = new ArrayList<>(descriptors.size());
            for (byte[] descriptor : descriptors) {
                if (distinct.isEmpty() || !java.util.Arrays.equals(distinct.get(distinct.size() - 1), descriptor)) {
                    distinct.add(descriptor);
                }
            }
            field(out, "bknd", section.backend().getBytes(StandardCharsets.UTF_8));
            field(out, "nixlDList", "nixlSDList".getBytes(StandardCharsets.US_ASCII));
            field(out, "t", littleEndian(section.memoryType(), Integer.BYTES));
            field(out, "n", littleEndian(distinct.size(), Long.BYTES));
            for (byte[] descriptor : distinct) {
                field(out, "", descriptor);
            }
        }
        return out.toByteArray();
    }

    /** NIXL's nixlBasicDesc order: device id, then address, then length (unsigned). */
    private static int compareDescriptors(byte[] a, byte[] b) {
        ByteBuffer x = ByteBuffer.wrap(a).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer y = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        int byDevice = Long.compareUnsigned(x.getLong(16), y.getLong(16));
        if (byDevice != 0) {
            return byDevice;
        }
        int byAddress = Long.compareUnsigned(x.getLong(0), y.getLong(0));
        return byAddress != 0 ? byAddress : Long.compareUnsigned(x.getLong(8), y.getLong(8));
    }

    /** One nixlSerDes field: tag, uint64 little-endian length, value, '|'. */
    private static void field(java.io.ByteArrayOutputStream out, String tag, byte[] value) {
        out.writeBytes(tag.getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(littleEndian(value.length, Long.BYTES));
        out.writeBytes(value);
        out.write('|');
    }

    private static byte[] littleEndian(long value, int bytes) {
        ByteBuffer buffer = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes == Integer.BYTES) {
            buffer.putInt((int) value);
        } else {
            buffer.putLong(value);
        }
        return buffer.array();
    }

    /** Backend plugin names are short identifiers (UCX, GDS, POSIX, ...). */
    private static String backendName(String name, String field) {
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-')) {
                throw new InvalidAgentMetadataException(field, "is not a backend name (letters, digits, '_', '-')");
            }
        }
        return name;
    }

    /** Reads {@code nixlSerDes} fields in order, refusing anything out of shape. */
    private static final class Reader {
        private final byte[] data;
        private int offset;

        Reader(byte[] data) {
            if (data == null) {
                throw new InvalidAgentMetadataException("header", "is missing (null)");
            }
            this.data = data;
        }

        int remaining() {
            return data.length - offset;
        }

        void expect(byte[] bytes, String field, String problem) {
            if (!startsWith(data, offset, bytes)) {
                throw new InvalidAgentMetadataException(field, problem);
            }
            offset += bytes.length;
        }

        /** A field's value, {@code min..max} bytes, as a little-endian buffer positioned at its start. */
        ByteBuffer bytes(String tag, String field, int min, int max) {
            byte[] tagBytes = tag.getBytes(StandardCharsets.US_ASCII);
            if (!startsWith(data, offset, tagBytes)) {
                throw new InvalidAgentMetadataException(field, "is missing (expected tag \"" + tag + "\" at byte "
                        + offset + ")");
            }
            int at = offset + tagBytes.length;
            if (data.length - at < Long.BYTES) {
                throw new InvalidAgentMetadataException(field, "length is truncated");
            }
            long length = ByteBuffer.wrap(data, at, Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).getLong();
            at += Long.BYTES;
            if (length < min || length > max) {
                throw new InvalidAgentMetadataException(field, "length must be " + min + " to " + max + " bytes, was "
                        + Long.toUnsignedString(length));
            }
            if (data.length - at < length + 1) {
                throw new InvalidAgentMetadataException(field, "length " + length + " runs past the end of the metadata");
            }
            if (data[at + (int) length] != '|') {
                throw new InvalidAgentMetadataException(field, "is not followed by the '|' separator");
            }
            offset = at + (int) length + 1;
            return ByteBuffer.wrap(data, at, (int) length).slice().order(ByteOrder.LITTLE_ENDIAN);
        }

        String text(String tag, String field, int min, int max) {
            ByteBuffer value = bytes(tag, field, min, max);
            byte[] bytes = new byte[value.remaining()];
            value.get(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        }

        long uint64Field(String tag, String field) {
            return bytesExactly(tag, field, Long.BYTES).getLong();
        }

        long uint32Field(String tag, String field) {
            return Integer.toUnsignedLong(bytesExactly(tag, field, Integer.BYTES).getInt());
        }

        private ByteBuffer bytesExactly(String tag, String field, int size) {
            return bytes(tag, field, size, size);
        }
    }

    /** The agent name the blob carries, or null when it is not NIXL agent metadata. */
    static String agentName(byte[] metadata) {
        int offset = 0;
        if (!startsWith(metadata, offset, HEADER)) {
            return null;
        }
        offset += HEADER.length;
        if (!startsWith(metadata, offset, AGENT_TAG)) {
            return null;
        }
        offset += AGENT_TAG.length;
        if (metadata.length < offset + Long.BYTES) {
            return null;
        }
        long length = ByteBuffer.wrap(metadata, offset, Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).getLong();
        offset += Long.BYTES;
        if (length <= 0 || length > MAX_NAME_BYTES || metadata.length < offset + length + 1
                || metadata[offset + (int) length] != '|') {
            return null;
        }
        return new String(metadata, offset, (int) length, StandardCharsets.UTF_8);
    }

    private static boolean startsWith(byte[] data, int offset, byte[] prefix) {
        if (data == null || data.length < offset + prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (data[offset + i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }
}
