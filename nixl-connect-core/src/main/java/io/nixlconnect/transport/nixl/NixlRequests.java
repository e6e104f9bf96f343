package io.nixlconnect.transport.nixl;

import static io.nixlconnect.transport.nixl.NixlAgentCore.check;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;

import java.util.List;

/**
 * Builds NIXL transfer requests: checks what the caller asks for before NIXL sees it, and turns region
 * lists into NIXL descriptor lists. Stateless; the agent calls it under its lifecycle lock.
 */
final class NixlRequests {

    private NixlRequests() {
    }

    /** Builds a NIXL transfer request; the descriptor lists and options are freed before returning. */
    static long createRequest(long agent, TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification, String description) {
        long localList = 0;
        long remoteList = 0;
        long optArgs = 0;
        try {
            localList = xferList(local);
            remoteList = xferList(remoteRegions);
            long[] handle = new long[1];
            check(NixlCapi.nixl_capi_create_opt_args(handle), "create transfer options");
            optArgs = handle[0];
            if (notification != null) {
                check(NixlCapi.nixl_capi_opt_args_set_notif_msg(optArgs, notification, notification.length),
                        "set notification");
                check(NixlCapi.nixl_capi_opt_args_set_has_notif(optArgs, true), "set notification flag");
            }
            int nixlOp = op == TransferOp.READ ? NixlCapi.XFER_READ : NixlCapi.XFER_WRITE;
            check(NixlCapi.nixl_capi_create_xfer_req(agent, nixlOp, localList, remoteList, remote, handle, optArgs),
                    "create " + description);
            return handle[0];
        } finally {
            if (optArgs != 0) {
                NixlCapi.nixl_capi_destroy_opt_args(optArgs);
            }
            if (localList != 0) {
                NixlCapi.nixl_capi_destroy_xfer_dlist(localList);
            }
            if (remoteList != 0) {
                NixlCapi.nixl_capi_destroy_xfer_dlist(remoteList);
            }
        }
    }

    static void validateTransfer(TransferOp op, List<MemoryRegion> local, String remote,
            List<MemoryRegion> remoteRegions) {
        if (op == null) {
            throw new IllegalArgumentException("transfer op must not be null");
        }
        if (remote == null || remote.isEmpty() || remote.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("remote agent name must be non-empty and free of NUL characters");
        }
        if (local == null || remoteRegions == null || local.isEmpty()) {
            throw new IllegalArgumentException("a transfer needs at least one local and one remote region");
        }
        if (local.size() != remoteRegions.size()) {
            throw new IllegalArgumentException("local and remote region lists differ in length: " + local.size()
                    + " vs " + remoteRegions.size());
        }
        for (int i = 0; i < local.size(); i++) {
            MemoryRegion l = local.get(i);
            MemoryRegion r = remoteRegions.get(i);
            if (l == null || r == null) {
                throw new IllegalArgumentException("region pair " + i + " contains null");
            }
            requireUsable(l, "local region " + i);
            requireUsable(r, "remote region " + i);
            if (l.length() != r.length()) {
                throw new IllegalArgumentException("region pair " + i + " differs in size: local " + l.length()
                        + " bytes, remote " + r.length() + " bytes");
            }
            if (l.type() != local.get(0).type() || r.type() != remoteRegions.get(0).type()) {
                throw new IllegalArgumentException("all regions of one side must share one memory type");
            }
        }
    }

    /** Empty regions are accepted (they never reach NIXL); others need an address. */
    static void requireUsable(MemoryRegion region, String what) {
        if (region.address() == 0 && region.length() > 0) {
            throw new IllegalArgumentException(what + " has address 0");
        }
        if (region.type() == MemoryType.DRAM && region.deviceId() != 0) {
            throw new IllegalArgumentException(what + " is host memory but names device " + region.deviceId());
        }
    }

    private static long xferList(List<MemoryRegion> regions) {
        long[] handle = new long[1];
        check(NixlCapi.nixl_capi_create_xfer_dlist(memType(regions.get(0).type()), handle),
                "create descriptor list");
        try {
            for (MemoryRegion region : regions) {
                int status = NixlCapi.nixl_capi_xfer_dlist_add_desc(handle[0], region.address(), region.length(),
                        region.deviceId());
                // The message is made only on failure: formatting it for every block was a fifth of the Java
                // time of a 1,024-block transfer (JFR).
                if (status != NixlCapi.SUCCESS) {
                    check(status, "describe " + region);
                }
            }
            return handle[0];
        } catch (RuntimeException e) {
            NixlCapi.nixl_capi_destroy_xfer_dlist(handle[0]);
            throw e;
        }
    }

    /** Host memory is DRAM to NIXL; GPU memory (CUDA and XPU alike, as Python registers XPU tensors) is VRAM. */
    static int memType(MemoryType type) {
        return type == MemoryType.DRAM ? NixlCapi.MEM_DRAM : NixlCapi.MEM_VRAM;
    }
}
