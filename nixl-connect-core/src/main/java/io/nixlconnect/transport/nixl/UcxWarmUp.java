package io.nixlconnect.transport.nixl;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.TransferOp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Pays UCX's first-connection cost when an agent starts instead of at its first peer's first operation (issue 32: a
 * new producer's first read took 25–40 ms, ~100x the steady state). UCX builds a worker's endpoint configuration
 * (which transports serve an endpoint, and the protocols chosen for each operation over them, from hundreds of
 * interface and topology queries: ~10 ms here) the first time that worker gets an endpoint of that kind. A new
 * producer got its first one when a reader connected to it, inside that reader's first read, while the reader waited.
 * Here a throwaway agent of the same process, with the same backends, reads a few bytes from the new agent with a
 * notification: the new agent answers the throwaway's connection request, as it will a reader's, and builds that
 * configuration now. Only the throwaway connects: were both to connect to each other, UCX would pair the two
 * endpoints and the new agent would never answer a request. Then the throwaway agent is destroyed, taking its
 * endpoints and sockets with it (the new agent's endpoint to it fails and UCX releases it). Measured with
 * {@code FirstOperationBenchmark}: the first read from a new producer 33 ms p50 before, 2 ms after. Best effort:
 * whatever fails is logged and the agent starts all the same.
 *
 * <p>Runs in the agent's constructor, before its progress loop starts and before anyone else can see it, so nothing
 * else calls into the new native agent meanwhile.
 */
final class UcxWarmUp {

    private static final Logger log = LoggerFactory.getLogger(UcxWarmUp.class);
    private static final int SIZE = 64;
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final byte[] NOTIFICATION = "nixl-connect-warm-up".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private UcxWarmUp() {
    }

    /** Warms {@code agent} (named {@code name}, its backends created) up; returns whether it completed. */
    static boolean warm(long agent, String name, NixlSettings settings) {
        long start = System.nanoTime();
        String partnerName = name + "-warm-up-" + Long.toHexString(System.nanoTime());
        long partner = 0;
        NixlBackends partnerBackends = new NixlBackends(settings.backends(), settings.backendParameters());
        Memory source = new Memory(SIZE);
        Memory target = new Memory(SIZE);
        source.clear();
        target.clear();
        long sourceList = 0;
        long targetList = 0;
        long read = 0;
        String loaded = null;
        boolean completed = false;
        try {
            long[] handle = new long[1];
            byte[] config = NixlCapi.agentConfig(false, 0, NixlCapi.THREAD_SYNC_STRICT);
            if (NixlCapi.nixl_capi_create_configured_agent(partnerName, config, handle) != NixlCapi.SUCCESS) {
                log.debug("NIXL agent {}: no warm-up (no partner agent)", name);
                return false;
            }
            partner = handle[0];
            partnerBackends.create(partner);
            sourceList = register(agent, source);
            targetList = register(partner, target);
            loaded = load(partner, metadata(agent));
            read = post(partner, target, loaded, source);
            completed = complete(agent, partner, read, start + TIMEOUT_NANOS);
            if (!completed) {
                log.debug("NIXL agent {}: warm-up did not complete within {} s", name,
                        TimeUnit.NANOSECONDS.toSeconds(TIMEOUT_NANOS));
            }
        } catch (RuntimeException e) {
            log.debug("NIXL agent {}: warm-up failed; the first peer pays UCX's first connection", name, e);
        } finally {
            // The request first (releasing aborts one still in flight), then the peer, the memory, the partner.
            if (read != 0) {
                release(partner, read);
            }
            if (loaded != null) {
                NixlCapi.nixl_capi_invalidate_remote_md(partner, loaded);
            }
            if (targetList != 0) {
                NixlCapi.nixl_capi_deregister_mem(partner, targetList, 0);
                NixlCapi.nixl_capi_destroy_reg_dlist(targetList);
            }
            if (partner != 0) {
                // Destroying the partner's worker closes its endpoints and sockets; the new agent's endpoint to it
                // fails, and UCX releases it as the new agent's progress loop runs.
                partnerBackends.destroy();
                NixlCapi.nixl_capi_destroy_agent(partner);
            }
            if (sourceList != 0) {
                NixlCapi.nixl_capi_deregister_mem(agent, sourceList, 0);
                NixlCapi.nixl_capi_destroy_reg_dlist(sourceList);
            }
            source.close();
            target.close();
        }
        log.debug("NIXL agent {}: UCX warm-up {} in {} ms", name, completed ? "done" : "given up",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        return completed;
    }

    private static long register(long agent, Memory memory) {
        long[] handle = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_create_reg_dlist(NixlCapi.MEM_DRAM, handle), "warm-up list");
        long list = handle[0];
        NixlAgentCore.check(NixlCapi.nixl_capi_reg_dlist_add_desc(list, Pointer.nativeValue(memory), SIZE, 0, null, 0),
                "warm-up descriptor");
        if (NixlCapi.nixl_capi_register_mem(agent, list, 0) != NixlCapi.SUCCESS) {
            NixlCapi.nixl_capi_destroy_reg_dlist(list);
            throw new IllegalStateException("warm-up registration refused");
        }
        return list;
    }

    private static byte[] metadata(long agent) {
        long[] data = new long[1];
        long[] length = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_get_local_md(agent, data, length), "warm-up metadata");
        try {
            return new Pointer(data[0]).getByteArray(0, (int) length[0]);
        } finally {
            Native.free(data[0]);
        }
    }

    private static String load(long agent, byte[] metadata) {
        long[] name = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_load_remote_md(agent, metadata, metadata.length, name), "warm-up load");
        try {
            return new Pointer(name[0]).getString(0);
        } finally {
            Native.free(name[0]);
        }
    }

    /** Posts a READ of {@code remote}'s memory into {@code local}, with a notification; returns the request. */
    private static long post(long agent, Memory local, String remote, Memory remoteMemory) {
        io.nixlconnect.transport.MemoryRegion into = region(local);
        io.nixlconnect.transport.MemoryRegion from = region(remoteMemory);
        long request = NixlRequests.createRequest(agent, TransferOp.READ, List.of(into), remote, List.of(from),
                NOTIFICATION, "warm-up READ");
        int status = NixlCapi.nixl_capi_post_xfer_req(agent, request, 0);
        if (status != NixlCapi.SUCCESS && status != NixlCapi.IN_PROGRESS) {
            release(agent, request);
            throw new IllegalStateException("warm-up post refused: " + NixlCapi.statusName(status));
        }
        return request;
    }

    private static io.nixlconnect.transport.MemoryRegion region(Memory memory) {
        return new io.nixlconnect.transport.MemoryRegion(Pointer.nativeValue(memory), SIZE,
                io.nixlconnect.transport.MemoryType.DRAM, 0);
    }

    /**
     * Polls the partner's request and the new agent's notifications (which progresses both workers: the new agent
     * answers the partner's connection request as it drains) until the read has ended and the notification arrived,
     * or the deadline.
     */
    private static boolean complete(long agent, long partner, long read, long deadline) {
        long[] handle = new long[1];
        NixlAgentCore.check(NixlCapi.nixl_capi_create_notif_map(handle), "warm-up notifications");
        long map = handle[0];
        try {
            boolean done = false;
            boolean notified = false;
            while (System.nanoTime() - deadline < 0) {
                done = done || ended(partner, read);
                notified = notified || notified(agent, map);
                if (done && notified) {
                    return true;
                }
                Thread.onSpinWait();
            }
            return false;
        } finally {
            NixlCapi.nixl_capi_destroy_notif_map(map);
        }
    }

    private static boolean ended(long agent, long request) {
        int status = NixlCapi.nixl_capi_get_xfer_status(agent, request);
        if (status != NixlCapi.IN_PROGRESS && status != NixlCapi.SUCCESS) {
            throw new IllegalStateException("warm-up transfer failed: " + NixlCapi.statusName(status));
        }
        return status == NixlCapi.SUCCESS;
    }

    private static boolean notified(long agent, long map) {
        NixlCapi.nixl_capi_get_notifs(agent, map, 0);
        long[] size = new long[1];
        NixlCapi.nixl_capi_notif_map_size(map, size);
        return size[0] > 0;
    }

    private static void release(long agent, long request) {
        if (NixlCapi.nixl_capi_release_xfer_req(agent, request) == NixlCapi.SUCCESS) {
            NixlCapi.nixl_capi_destroy_xfer_req(request);
        }
    }
}
