package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.MemoryRegion;

import java.util.ArrayList;
import java.util.List;

import static io.nixlconnect.transport.nixl.NixlAgentCore.check;

/**
 * One NIXL agent's metadata as a peer loads it: all of it, or only what an operation's registered regions need.
 * Every method runs under the agent's lifecycle read lock with the agent open, held by the caller.
 */
final class NixlLocalMetadata {

    private final NixlAgentCore core;
    private final NixlRegistrations registrations;
    /** Header, agent name and connection info of this agent's metadata (fixed once its backends exist). */
    private volatile byte[] connectionPart;

    NixlLocalMetadata(NixlAgentCore core, NixlRegistrations registrations) {
        this.core = core;
        this.registrations = registrations;
    }

    /** NIXL's full metadata of the agent: every registration's keys, and its connection info. */
    byte[] full() {
        long[] data = new long[1];
        long[] len = new long[1];
        check(NixlCapi.nixl_capi_get_local_md(core.handle(), data, len), "get local metadata");
        return take(data[0], len[0]);
    }

    /**
     * The metadata with only the memory sections of {@code registered} (regions registered through {@link
     * NixlRegistrations#register}), and the connection info: what a peer needs for an operation within them, the same
     * size however many other regions the agent holds (NIXL's full metadata carries every registration's key: 220 KB
     * with 5,000 registered). Assembled in Java from the connection part (read once) and each registration's sections
     * (read once per registration, with {@code nixl_capi_get_local_partial_md}, whose output lacks connection info).
     * Falls back to the {@link #full} metadata for a region it does not hold a registration of.
     */
    byte[] describing(List<MemoryRegion> registered) {
        List<NixlMetadataFormat.Section> sections = new ArrayList<>();
        for (MemoryRegion region : registered) {
            if (region.length() == 0) {
                continue; // never registered with NIXL: nothing to describe
            }
            NixlRegistration registration = registrations.of(region);
            if (registration == null) {
                return full();
            }
            List<NixlMetadataFormat.Section> known = registration.sections();
            if (known == null) {
                known = NixlMetadataFormat.sections(partial(registration.dlist()));
                registration.sections(known);
            }
            sections.addAll(known);
        }
        byte[] connections = connectionPart;
        if (connections == null) {
            connectionPart = connections = NixlMetadataFormat.connectionPart(full());
        }
        return NixlMetadataFormat.assemble(connections, sections);
    }

    /** NIXL's partial metadata of one registration's descriptor list (its sections; no connection info). */
    private byte[] partial(long dlist) {
        long[] data = new long[1];
        long[] len = new long[1];
        check(NixlCapi.nixl_capi_get_local_partial_md(core.handle(), dlist, data, len, 0), "get partial local metadata");
        return take(data[0], len[0]);
    }

    /** Copies and frees metadata NIXL allocated for the caller. */
    private static byte[] take(long data, long length) {
        try {
            return new Pointer(data).getByteArray(0, Math.toIntExact(length));
        } finally {
            Native.free(data);
        }
    }
}
