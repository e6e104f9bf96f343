package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.InvalidAgentMetadataException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;

/**
 * The two UCX blobs inside NIXL's UCX section, read in Java before NIXL hands them to UCX: the packed
 * worker address (a backend's connection info) and each descriptor's packed remote key. UCX unpacks both
 * without their length ({@code ucp_ep_create} takes the address alone, {@code ucp_ep_rkey_unpack} the key
 * alone) and trusts every count, length, index and memory type in them: mutated bytes crashed the loading
 * process in {@code ucp_proto_init_add_buffer_copy_time} (a memory type past UCX's tables) and in libc (a
 * length running past the address). So every field UCX uses to move through the blob, or to index a
 * table, is checked here against UCX's own limits, and each blob must end exactly where UCX would stop
 * reading.
 *
 * <p>Formats, as UCX 1.20+ writes them ({@code src/ucp/wireup/address.c}, {@code src/ucp/core/ucp_rkey.c};
 * docs/nixl.md has the layouts): the address in version 1 (UCX's default) or 2, not in unified mode
 * ({@code UCX_UNIFIED_MODE=y} drops the lengths from the address, so it cannot be checked and is refused);
 * the key with its system device byte and, when that device is known, its distance list up to the
 * terminator. Transport-specific bytes inside (device and interface addresses, each memory domain's key)
 * are bounded by their lengths but not interpreted.
 */
final class UcxPackedFormats {

    /** UCX's {@code UCP_MAX_RESOURCES}: transports an address may list. */
    static final int MAX_TRANSPORTS = 128;
    /** UCX's {@code UCP_MAX_MDS}: memory domain indices are below it. */
    static final int MAX_MEMORY_DOMAINS = 64;
    /** UCX's {@code UCP_MAX_LANES}: endpoint addresses per transport, and lane indices. */
    static final int MAX_LANES = 64;
    /** UCX's {@code UCS_MEMORY_TYPE_LAST}: HOST, CUDA, CUDA_MANAGED, ROCM, ROCM_MANAGED, RDMA, ZE_*, GAUDI. */
    static final int MEMORY_TYPES = 10;
    static final int MEMORY_TYPE_HOST = 0;

    private static final int VERSION_1 = 0;
    private static final int VERSION_2 = 1;
    private static final int HEADER_DEBUG_INFO = 0x1;
    private static final int HEADER_WORKER_UUID = 0x2;
    private static final int HEADER_CLIENT_ID = 0x4;
    private static final int HEADER_AM_ONLY = 0x8;
    private static final int HEADER_KNOWN_FLAGS = HEADER_DEBUG_INFO | HEADER_WORKER_UUID | HEADER_CLIENT_ID
            | HEADER_AM_ONLY;
    private static final int NULL_RESOURCE = 0xff;
    private static final int MD_EMPTY_DEVICE = 0x80;
    private static final int MD_INDEX_MASK = 0x7f;
    private static final int FLAG_LAST = 0x80;
    private static final int DEVICE_NUM_PATHS = 0x40;
    private static final int DEVICE_SYS_DEVICE = 0x20;
    private static final int DEVICE_LENGTH_MASK = 0x1f;
    private static final int IFACE_HAS_EP_ADDRESS = 0x40;
    private static final int IFACE_LENGTH_MASK = 0x3f;
    /** {@code ucp_address_packed_iface_attr_t} (v1: three floats and a word) and its v2 form (fp8s). */
    private static final int IFACE_ATTRIBUTES_V1 = 16;
    private static final int IFACE_ATTRIBUTES_V2 = 8;
    private static final int SYS_DEVICE_UNKNOWN = 0xff;
    /** {@code ucp_rkey_packed_distance_t}: system device, latency, bandwidth. */
    private static final int DISTANCE_BYTES = 3;

    private UcxPackedFormats() {
    }

    /** Whether this process's UCX packs addresses without lengths (they can then not be checked). */
    static boolean unifiedMode() {
        String value = System.getenv("UCX_UNIFIED_MODE");
        return value != null && switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "y", "yes", "on", "1", "true" -> true;
            default -> false;
        };
    }

    /**
     * Checks a packed UCX worker address (NIXL's UCX connection info).
     *
     * @throws InvalidAgentMetadataException naming {@code field} and the part of the address at fault
     */
    static void validateWorkerAddress(ByteBuffer address, String field) {
        if (unifiedMode()) {
            throw new InvalidAgentMetadataException(field, "cannot be checked: UCX_UNIFIED_MODE is set in this"
                    + " process, and a unified-mode UCX address carries no lengths");
        }
        Cursor in = new Cursor(address, field, "UCX worker address");
        int header = in.u8("header");
        int version = header & 0x0f;
        int flags;
        if (version == VERSION_1) {
            flags = header >>> 4;
        } else if (version == VERSION_2) {
            flags = in.u8("header flags");
        } else {
            throw in.invalid("header", "has address version " + version + "; UCX knows 1 and 2 (0 and 1 on the wire)");
        }
        if ((flags & ~HEADER_KNOWN_FLAGS) != 0) {
            throw in.invalid("header flags", "has unknown bits 0x" + Integer.toHexString(flags & ~HEADER_KNOWN_FLAGS));
        }
        if (version == VERSION_1 || (flags & HEADER_WORKER_UUID) != 0) {
            in.skip(Long.BYTES, "worker uuid");
        }
        if ((flags & HEADER_CLIENT_ID) != 0) {
            in.skip(Long.BYTES, "client id");
        }
        if ((flags & HEADER_DEBUG_INFO) != 0) {
            in.skip(in.u8("worker name length"), "worker name");
        }
        if (in.peek("device list") == NULL_RESOURCE) {
            in.u8("device list");
            in.end();
            return;
        }
        int transports = 0;
        int device = 0;
        boolean lastDevice;
        do {
            String at = "device[" + device + "]";
            int mdByte = in.u8(at + ".md");
            boolean empty = (mdByte & MD_EMPTY_DEVICE) != 0;
            int mdIndex = extended(in, mdByte & MD_INDEX_MASK, MD_INDEX_MASK, version, at + ".md");
            int lengthByte = in.u8(at + ".length");
            lastDevice = (lengthByte & FLAG_LAST) != 0;
            if (!(empty && lastDevice) && mdIndex >= MAX_MEMORY_DOMAINS) { // the empty last device carries a version
                throw in.invalid(at + ".md", "is memory domain " + mdIndex + "; UCX has at most "
                        + MAX_MEMORY_DOMAINS);
            }
            int deviceAddressLength = extended(in, lengthByte & DEVICE_LENGTH_MASK, DEVICE_LENGTH_MASK, version,
                    at + ".length");
            if ((lengthByte & DEVICE_NUM_PATHS) != 0 && in.u8(at + ".paths") == 0) {
                throw in.invalid(at + ".paths", "is 0; a device has at least one path");
            }
            if ((lengthByte & DEVICE_SYS_DEVICE) != 0) {
                in.u8(at + ".sysDevice");
            }
            ByteBuffer deviceAddress = in.slice(deviceAddressLength, at + ".address");
            boolean lastTransport = empty;
            int transport = 0;
            while (!lastTransport) {
                String tl = at + ".transport[" + transport + "]";
                if (++transports > MAX_TRANSPORTS) {
                    throw in.invalid(tl, "is past UCX's limit of " + MAX_TRANSPORTS + " transports");
                }
                int nameChecksum = in.u16(tl + ".nameChecksum");
                ifaceAttributes(in, version, tl + ".attributes");
                int tlByte = in.u8(tl + ".length");
                lastTransport = (tlByte & FLAG_LAST) != 0;
                int ifaceAddressLength = extended(in, tlByte & IFACE_LENGTH_MASK, IFACE_LENGTH_MASK, version,
                        tl + ".length");
                in.skip(ifaceAddressLength, tl + ".address");
                KnownTransport known = KNOWN_TRANSPORTS.get(nameChecksum);
                if (known != null) {
                    known.check(in, tl, deviceAddress.duplicate().order(ByteOrder.LITTLE_ENDIAN), ifaceAddressLength);
                }
                boolean lastEndpoint = (tlByte & IFACE_HAS_EP_ADDRESS) == 0;
                int endpoints = 0;
                while (!lastEndpoint) {
                    String ep = tl + ".endpoint[" + endpoints + "]";
                    if (++endpoints > MAX_LANES) {
                        throw in.invalid(ep, "is past UCX's limit of " + MAX_LANES + " endpoint addresses");
                    }
                    in.skip(in.u8(ep + ".length"), ep + ".address");
                    lastEndpoint = (in.u8(ep + ".lane") & FLAG_LAST) != 0;
                }
                transport++;
            }
            device++;
        } while (!lastDevice);
        in.end();
    }

    /**
     * The transports of the NIXL wheels' UCX whose device and interface addresses UCX reads at fixed offsets
     * without checking their length (an empty one is a NULL pointer to UCX: crashes in
     * {@code uct_tcp_ep_set_dest_addr} and {@code uct_iface_local_is_reachable} in fuzzing), keyed by the name
     * checksum the address carries ({@code ucs_crc16_string}). Transports not listed (InfiniBand, CUDA, ...)
     * are bounded by their lengths only.
     */
    private static final Map<Integer, KnownTransport> KNOWN_TRANSPORTS = Map.of(
            nameChecksum("self"), new KnownTransport("self", DeviceAddress.ANY, 8),
            nameChecksum("tcp"), new KnownTransport("tcp", DeviceAddress.TCP, 2),
            nameChecksum("cma"), new KnownTransport("cma", DeviceAddress.HOST, 4),
            nameChecksum("posix"), new KnownTransport("posix", DeviceAddress.HOST, 8),
            nameChecksum("sysv"), new KnownTransport("sysv", DeviceAddress.HOST, 8),
            nameChecksum("xpmem"), new KnownTransport("xpmem", DeviceAddress.HOST, 8),
            nameChecksum("knem"), new KnownTransport("knem", DeviceAddress.HOST, 0));

    private enum DeviceAddress { ANY, HOST, TCP }

    private static final int TCP_FLAG_LOOPBACK = 0x1;
    private static final int AF_INET = 2;
    private static final int AF_INET6 = 10;

    /** The fewest bytes UCX reads from one transport's device and interface addresses. */
    private record KnownTransport(String name, DeviceAddress device, int minIfaceBytes) {

        void check(Cursor in, String tl, ByteBuffer deviceAddress, int ifaceBytes) {
            if (ifaceBytes < minIfaceBytes) {
                throw in.invalid(tl + ".address", "is " + ifaceBytes + " byte(s); UCX's " + name + " reads "
                        + minIfaceBytes);
            }
            int need = switch (device) {
                case ANY -> 0;
                case HOST -> hostAddressBytes(deviceAddress, 0);
                case TCP -> tcpDeviceAddressBytes(in, tl, deviceAddress);
            };
            if (deviceAddress.remaining() < need) {
                throw in.invalid(tl + " device address", "is " + deviceAddress.remaining() + " byte(s); UCX's " + name
                        + " reads " + need);
            }
        }

        /** {@code uct_iface_local_addr_ns_t}: a 64-bit host id, and a 32-bit namespace when its top bit is set. */
        private static int hostAddressBytes(ByteBuffer address, int at) {
            boolean namespaced = address.remaining() >= at + Long.BYTES && address.getLong(at) < 0;
            return at + Long.BYTES + (namespaced ? Integer.BYTES : 0);
        }

        /** {@code uct_tcp_device_addr_t}: flags, family, then an IPv4/IPv6 address or, on loopback, a host id. */
        private static int tcpDeviceAddressBytes(Cursor in, String tl, ByteBuffer address) {
            if (address.remaining() < 2) {
                return 2;
            }
            int flags = address.get(0) & 0xff;
            int family = address.get(1) & 0xff;
            if (family != AF_INET && family != AF_INET6) {
                throw in.invalid(tl + " device address", "has address family " + family + "; UCX's tcp knows "
                        + AF_INET + " and " + AF_INET6);
            }
            if ((flags & TCP_FLAG_LOOPBACK) != 0) {
                return hostAddressBytes(address, 2);
            }
            return 2 + (family == AF_INET ? 4 : 16);
        }
    }

    /** UCX's {@code ucs_crc16_string}: CRC-16, polynomial 0x8408 (reflected), initial 0xffff, inverted. */
    static int nameChecksum(String name) {
        int crc = 0xffff;
        for (byte b : name.getBytes(StandardCharsets.US_ASCII)) {
            crc ^= b & 0xff;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0x8408 : crc >>> 1;
            }
        }
        return ~crc & 0xffff;
    }

    /** A 7/5/6-bit value; in address version 2 the all-ones value means "the next byte holds it". */
    private static int extended(Cursor in, int value, int mask, int version, String field) {
        return version == VERSION_2 && value == mask ? in.u8(field + " (extended)") : value;
    }

    private static void ifaceAttributes(Cursor in, int version, String field) {
        if (version == VERSION_1) {
            ByteBuffer attributes = in.slice(IFACE_ATTRIBUTES_V1, field);
            float overhead = attributes.getFloat();
            float bandwidth = attributes.getFloat();
            float latency = attributes.getFloat();
            // UCX >= 1.12 packs a positive bandwidth (older ones a negative "shared" figure; their keys are
            // refused anyway) and non-negative times; anything else is a shifted or forged field.
            if (!(overhead >= 0 && overhead < Float.POSITIVE_INFINITY && latency >= 0
                    && latency < Float.POSITIVE_INFINITY && bandwidth > 0 && bandwidth < Float.POSITIVE_INFINITY)) {
                throw in.invalid(field, "holds overhead " + overhead + ", bandwidth " + bandwidth + ", latency "
                        + latency + "; UCX packs finite times >= 0 and a bandwidth > 0");
            }
        } else {
            in.skip(IFACE_ATTRIBUTES_V2, field);
        }
    }

    /**
     * Checks a packed UCX remote key (a NIXL descriptor's key) for memory NIXL describes as
     * {@code nixlMemoryType} (DRAM or VRAM).
     *
     * @throws InvalidAgentMetadataException naming {@code field} and the part of the key at fault
     */
    static void validateRemoteKey(ByteBuffer key, int nixlMemoryType, String field) {
        Cursor in = new Cursor(key, field, "UCX remote key");
        long mdMap = in.u64("md map");
        int memoryType = in.u8("memory type");
        if (memoryType >= MEMORY_TYPES) {
            throw in.invalid("memory type", "is " + memoryType + "; UCX knows 0 to " + (MEMORY_TYPES - 1));
        }
        // NIXL registers DRAM as host memory and refuses VRAM that UCX sees as host; any other pairing
        // sends UCX down memory-type paths this process may not have (one crashed it in fuzzing).
        if (nixlMemoryType == NixlMetadataFormat.MEM_DRAM && memoryType != MEMORY_TYPE_HOST) {
            throw in.invalid("memory type", "is " + memoryType + " in a DRAM section; host memory is 0");
        }
        if (nixlMemoryType == NixlMetadataFormat.MEM_VRAM && memoryType == MEMORY_TYPE_HOST) {
            throw in.invalid("memory type", "is host memory in a VRAM section");
        }
        for (int md = 0; md < MAX_MEMORY_DOMAINS; md++) {
            if ((mdMap & (1L << md)) != 0) {
                in.skip(in.u8("md[" + md + "] key length"), "md[" + md + "] key");
            }
        }
        if (mdMap == 0) {
            // Memory no transport needs a key for (e.g. UCX_TLS=tcp): UCX packs md map and type only.
            in.end();
            return;
        }
        // UCX >= 1.20 always packs the system device of a non-empty key; when it is known, UCX reads
        // distances up to a terminator with no end bound, so the terminator must be inside the key.
        int sysDevice = in.u8("system device");
        if (sysDevice != SYS_DEVICE_UNKNOWN) {
            int distance = 0;
            while (in.peek("distance[" + distance + "]") != SYS_DEVICE_UNKNOWN) {
                in.skip(DISTANCE_BYTES, "distance[" + distance + "]");
                if (++distance > 255) {
                    throw in.invalid("distance list", "lists more than 255 devices");
                }
            }
            in.u8("distance list terminator");
        }
        in.end();
    }

    /** Walks a blob, refusing any read past its end. */
    private static final class Cursor {
        private final ByteBuffer data;
        private final String field;
        private final String kind;

        Cursor(ByteBuffer data, String field, String kind) {
            this.data = data.slice().order(ByteOrder.LITTLE_ENDIAN);
            this.field = field;
            this.kind = kind;
        }

        int peek(String part) {
            need(1, part);
            return data.get(data.position()) & 0xff;
        }

        int u8(String part) {
            need(1, part);
            return data.get() & 0xff;
        }

        int u16(String part) {
            need(Short.BYTES, part);
            return data.getShort() & 0xffff;
        }

        long u64(String part) {
            need(Long.BYTES, part);
            return data.getLong();
        }

        void skip(int bytes, String part) {
            need(bytes, part);
            data.position(data.position() + bytes);
        }

        ByteBuffer slice(int bytes, String part) {
            need(bytes, part);
            ByteBuffer slice = data.slice().limit(bytes).order(ByteOrder.LITTLE_ENDIAN);
            data.position(data.position() + bytes);
            return slice;
        }

        void end() {
            if (data.hasRemaining()) {
                throw invalid("end", data.remaining() + " byte(s) follow where UCX stops reading (at byte "
                        + data.position() + ")");
            }
        }

        private void need(int bytes, String part) {
            if (data.remaining() < bytes) {
                throw invalid(part, "runs past the end (" + bytes + " byte(s) needed at byte " + data.position()
                        + " of " + data.limit() + ")");
            }
        }

        InvalidAgentMetadataException invalid(String part, String problem) {
            return new InvalidAgentMetadataException(field, "(" + kind + "): " + part + " " + problem);
        }
    }
}
