package io.nixlconnect.transport.nixl;

import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static io.nixlconnect.transport.nixl.NixlAgentCore.check;

/**
 * The regions registered with one NIXL agent, also by region (for metadata that describes only an operation's
 * regions, {@link NixlLocalMetadata}). Every method runs under the agent's lifecycle lock, held by the caller: the
 * read side, with the agent open, for {@link #register}; the write side for {@link #releaseAll} as the agent closes.
 * Logs under {@link NixlAgentCore}'s logger, as before.
 */
final class NixlRegistrations {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);

    private final NixlAgentCore core;
    private final Set<NixlRegistration> registrations = ConcurrentHashMap.newKeySet();
    private final Map<MemoryRegion, NixlRegistration> byRegion = new ConcurrentHashMap<>();

    NixlRegistrations(NixlAgentCore core) {
        this.core = core;
    }

    /** Registers {@code region} (checked usable by the caller) with NIXL; a zero-length one only here. */
    NixlRegistration register(MemoryRegion region) {
        if (region.length() == 0) {
            // Legal on the wire, refused by NIXL ("region is empty"); transfers skip such pairs.
            return NixlRegistration.empty(core, region);
        }
        long[] dlist = new long[1];
        check(NixlCapi.nixl_capi_create_reg_dlist(NixlRequests.memType(region.type()), dlist), "create registration list");
        try (DeviceContext context = NixlCudaSupport.contextFor(List.of(region))) {
            check(NixlCapi.nixl_capi_reg_dlist_add_desc(dlist[0], region.address(), region.length(),
                    region.deviceId(), null, 0), "describe " + region);
            int status = NixlCapi.nixl_capi_register_mem(core.handle(), dlist[0], 0);
            if (status != NixlCapi.SUCCESS && region.type() == MemoryType.VRAM) {
                throw new TransportException(NixlCudaSupport.vramRegistrationFailure(region, NixlCapi.statusName(status)));
            }
            check(status, "register " + region);
        } catch (RuntimeException e) {
            NixlCapi.nixl_capi_destroy_reg_dlist(dlist[0]);
            throw e;
        }
        NixlRegistration registration = new NixlRegistration(core, region, dlist[0]);
        registrations.add(registration);
        byRegion.put(region, registration);
        return registration;
    }

    /** Deregisters (registration closing); nothing to do once the agent's close released it, or destroyed it. */
    void deregister(NixlRegistration registration, long dlist) {
        byRegion.remove(registration.region(), registration);
        if (!registrations.remove(registration) || core.handle() == 0) {
            return;
        }
        deregisterNative(registration.region(), dlist);
    }

    /** The live registration of exactly {@code region}; null if there is none. */
    NixlRegistration of(MemoryRegion region) {
        return byRegion.get(region);
    }

    int count() {
        return registrations.size();
    }

    /** The agent is closing: marks every registration released and deregisters it from NIXL. */
    void releaseAll() {
        for (NixlRegistration registration : registrations) {
            registration.markReleased();
            deregisterNative(registration.region(), registration.dlist());
        }
        registrations.clear();
        byRegion.clear();
    }

    private void deregisterNative(MemoryRegion region, long dlist) {
        int status = NixlCapi.nixl_capi_deregister_mem(core.handle(), dlist, 0);
        NixlCapi.nixl_capi_destroy_reg_dlist(dlist);
        if (status != NixlCapi.SUCCESS) {
            log.warn("NIXL agent {}: deregistering {} failed: {}", core.name(), region, NixlCapi.statusName(status));
        }
    }
}
