package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Direct JNA mapping of the part of NIXL's C API ({@code libnixl_capi.so}) this transport uses.
 *
 * <p>Written from the declarations in NIXL's {@code src/bindings/rust/wrapper.h}. Direct mapping
 * (static natives bound with {@link Native#register}) avoids JNA's reflective proxy on the hot
 * path. Conventions: opaque handles and {@code size_t} are {@code long} (64-bit only, checked at
 * bind time); out-parameters are one-element {@code long[]}; C {@code bool} results come back as
 * {@code byte} because only the low byte of the return register is defined.
 *
 * <p>Every function returns a status: {@link #SUCCESS}, {@link #IN_PROGRESS} or a negative error.
 */
final class NixlCapi {

    static final int SUCCESS = 0;
    static final int IN_PROGRESS = 1;
    static final int ERROR_BACKEND = -2;

    static final int MEM_DRAM = 0;
    static final int MEM_VRAM = 1;

    static final int XFER_READ = 0;
    static final int XFER_WRITE = 1;

    /** Symbols a usable libnixl_capi.so must export; missing ones mean a NIXL older than 1.1. */
    static final List<String> REQUIRED_SYMBOLS = List.of(
            "nixl_capi_is_stub", "nixl_capi_create_agent", "nixl_capi_create_configured_agent", "nixl_capi_destroy_agent",
            "nixl_capi_get_local_md", "nixl_capi_load_remote_md", "nixl_capi_invalidate_remote_md",
            "nixl_capi_get_available_plugins", "nixl_capi_string_list_size", "nixl_capi_string_list_get",
            "nixl_capi_destroy_string_list", "nixl_capi_get_plugin_params", "nixl_capi_destroy_mem_list",
            "nixl_capi_create_params", "nixl_capi_params_add", "nixl_capi_destroy_params",
            "nixl_capi_create_backend", "nixl_capi_destroy_backend", "nixl_capi_create_opt_args",
            "nixl_capi_destroy_opt_args", "nixl_capi_opt_args_add_backend", "nixl_capi_opt_args_set_notif_msg",
            "nixl_capi_opt_args_set_has_notif", "nixl_capi_create_reg_dlist", "nixl_capi_reg_dlist_add_desc",
            "nixl_capi_destroy_reg_dlist", "nixl_capi_register_mem", "nixl_capi_deregister_mem",
            "nixl_capi_create_xfer_dlist", "nixl_capi_xfer_dlist_add_desc", "nixl_capi_destroy_xfer_dlist",
            "nixl_capi_create_xfer_req", "nixl_capi_post_xfer_req", "nixl_capi_get_xfer_status",
            "nixl_capi_release_xfer_req", "nixl_capi_destroy_xfer_req", "nixl_capi_create_notif_map",
            "nixl_capi_destroy_notif_map", "nixl_capi_get_notifs", "nixl_capi_notif_map_size",
            "nixl_capi_notif_map_get_agent_at", "nixl_capi_notif_map_get_notifs_size",
            "nixl_capi_notif_map_get_notif", "nixl_capi_notif_map_clear", "nixl_capi_gen_notif",
            // In NIXL's C API since 1.0:
            "nixl_capi_get_local_partial_md", "nixl_capi_agent_make_connection", "nixl_capi_prep_xfer_dlist",
            "nixl_capi_release_xfer_dlist_handle", "nixl_capi_make_xfer_req");

    private NixlCapi() {
    }

    /** Lists the required symbols {@code library} does not export. */
    static List<String> missingSymbols(NativeLibrary library) {
        List<String> missing = new ArrayList<>();
        for (String symbol : REQUIRED_SYMBOLS) {
            try {
                library.getFunction(symbol);
            } catch (UnsatisfiedLinkError e) {
                missing.add(symbol);
            }
        }
        return missing;
    }

    /** Binds the natives below to {@code library}. Once per JVM (a class binds only once). */
    static void bind(NativeLibrary library) {
        if (Native.POINTER_SIZE != 8 || Native.SIZE_T_SIZE != 8) {
            throw new IllegalStateException("the NIXL binding needs a 64-bit JVM");
        }
        Native.register(NixlCapi.class, library);
        queryXferBackend = optional(library, "nixl_capi_query_xfer_backend");
        xferTelemetry = optional(library, "nixl_capi_get_xfer_telemetry");
    }

    // --- optional: newer NIXLs only; absent ones leave those details out ---

    private static volatile com.sun.jna.Function queryXferBackend;
    private static volatile com.sun.jna.Function xferTelemetry;

    private static com.sun.jna.Function optional(NativeLibrary library, String symbol) {
        try {
            return library.getFunction(symbol);
        } catch (UnsatisfiedLinkError e) {
            return null;
        }
    }

    /**
     * {@code nixl_capi_query_xfer_backend}: the backend NIXL chose for a request, as a newly allocated
     * {@code nixl_capi_backend_s} wrapper (free it with {@link #nixl_capi_destroy_backend}); -6 when the library lacks it.
     */
    static int queryXferBackend(long agent, long request, long[] backend) {
        com.sun.jna.Function function = queryXferBackend;
        return function == null ? -6 : function.invokeInt(new Object[] {agent, request, backend});
    }

    /**
     * {@code nixl_capi_get_xfer_telemetry} into {@code telemetry} (at least 5 longs: start time, post duration and
     * transfer duration in microseconds, total bytes, descriptor count); -6 when the library lacks it, -5 when the
     * agent does not capture telemetry.
     */
    static int xferTelemetry(long agent, long request, long[] telemetry) {
        com.sun.jna.Function function = xferTelemetry;
        return function == null ? -6 : function.invokeInt(new Object[] {agent, request, telemetry});
    }

    static final int THREAD_SYNC_STRICT = 1;

    /**
     * Encodes {@code nixl_capi_agent_config_t} (x86-64 layout, 40 bytes): bool enable_prog_thread @0,
     * bool enable_listen_thread @1, int listen_port @4, enum thread_sync @8, unsigned num_workers @12,
     * uint64 pthr_delay_us @16, uint64 lthr_delay_us @24, bool capture_telemetry @32. Telemetry is captured: it
     * gives each transfer's post and transfer durations (operation attributes).
     */
    static byte[] agentConfig(boolean progressThread, long progressDelayMicros, int threadSync) {
        ByteBuffer cfg = ByteBuffer.allocate(AGENT_CONFIG_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        cfg.put(0, (byte) (progressThread ? 1 : 0));
        cfg.put(1, (byte) 0);
        cfg.putInt(4, 0);
        cfg.putInt(8, threadSync);
        cfg.putInt(12, 1);
        cfg.putLong(16, progressDelayMicros);
        cfg.putLong(24, 100_000);
        cfg.put(32, (byte) 1);
        return cfg.array();
    }

    static final int AGENT_CONFIG_SIZE = 40;

    static String statusName(int status) {
        return switch (status) {
            case SUCCESS -> "SUCCESS";
            case IN_PROGRESS -> "IN_PROGRESS";
            case -1 -> "ERROR_INVALID_PARAM";
            case -2 -> "ERROR_BACKEND";
            case -3 -> "ERROR_INVALID_STATE";
            case -4 -> "ERROR_EXCEPTION";
            case -5 -> "ERROR_NO_TELEMETRY";
            case -6 -> "ERROR_NOT_FOUND";
            default -> "status " + status;
        };
    }

    // --- library ---
    static native byte nixl_capi_is_stub();

    // --- agents and metadata ---
    static native int nixl_capi_create_agent(String name, long[] agent);

    /**
     * {@code cfg} is a {@code nixl_capi_agent_config_t}, see {@link #agentConfig}.
     */
    static native int nixl_capi_create_configured_agent(String name, byte[] cfg, long[] agent);

    static native int nixl_capi_destroy_agent(long agent);

    static native int nixl_capi_get_local_md(long agent, long[] data, long[] len);

    static native int nixl_capi_load_remote_md(long agent, byte[] data, long len, long[] agentName);

    static native int nixl_capi_invalidate_remote_md(long agent, String remoteAgent);

    // --- plugins, parameters, backends ---
    static native int nixl_capi_get_available_plugins(long agent, long[] plugins);

    static native int nixl_capi_string_list_size(long list, long[] size);

    static native int nixl_capi_string_list_get(long list, long index, long[] str);

    static native int nixl_capi_destroy_string_list(long list);

    static native int nixl_capi_get_plugin_params(long agent, String plugin, long[] mems, long[] params);

    static native int nixl_capi_destroy_mem_list(long list);

    static native int nixl_capi_create_params(long[] params);

    static native int nixl_capi_params_add(long params, String key, String value);

    static native int nixl_capi_destroy_params(long params);

    static native int nixl_capi_create_backend(long agent, String plugin, long params, long[] backend);

    static native int nixl_capi_destroy_backend(long backend);

    // --- optional arguments ---
    static native int nixl_capi_create_opt_args(long[] args);

    static native int nixl_capi_destroy_opt_args(long args);

    static native int nixl_capi_opt_args_add_backend(long args, long backend);

    static native int nixl_capi_opt_args_set_notif_msg(long args, byte[] data, long len);

    static native int nixl_capi_opt_args_set_has_notif(long args, boolean hasNotif);

    // --- registration ---
    static native int nixl_capi_create_reg_dlist(int memType, long[] dlist);

    static native int nixl_capi_reg_dlist_add_desc(long dlist, long addr, long len, long devId,
            Pointer metadata, long metadataLen);

    static native int nixl_capi_destroy_reg_dlist(long dlist);

    static native int nixl_capi_register_mem(long agent, long dlist, long optArgs);

    static native int nixl_capi_deregister_mem(long agent, long dlist, long optArgs);

    // --- transfers ---
    static native int nixl_capi_create_xfer_dlist(int memType, long[] dlist);

    static native int nixl_capi_xfer_dlist_add_desc(long dlist, long addr, long len, long devId);

    static native int nixl_capi_destroy_xfer_dlist(long dlist);

    static native int nixl_capi_create_xfer_req(long agent, int op, long localDescs, long remoteDescs,
            String remoteAgent, long[] request, long optArgs);

    static native int nixl_capi_post_xfer_req(long agent, long request, long optArgs);

    static native int nixl_capi_get_xfer_status(long agent, long request);

    static native int nixl_capi_release_xfer_req(long agent, long request);

    static native int nixl_capi_destroy_xfer_req(long request);

    // --- prepared descriptor lists: prepared once, then requests are index arrays into them ---
    /**
     * Prepares {@code descs} for requests: {@code agentName} empty for this agent's own (registered) memory, a loaded
     * peer's name for its memory. The handle outlives {@code descs}; release it before the peer is unloaded.
     */
    static native int nixl_capi_prep_xfer_dlist(long agent, String agentName, long descs, long[] handle, long optArgs);

    static native int nixl_capi_release_xfer_dlist_handle(long agent, long handle);

    /** A request moving prepared entries {@code localIndices[i]} to or from {@code remoteIndices[i]}. */
    static native int nixl_capi_make_xfer_req(long agent, int op, long localHandle, int[] localIndices,
            long localCount, long remoteHandle, int[] remoteIndices, long remoteCount, long[] request, long optArgs);

    // --- metadata of part of the agent, and connecting ahead of the first transfer ---
    /** This agent's metadata for the registered regions in {@code regDlist} (malloc'd; free with Native.free). */
    static native int nixl_capi_get_local_partial_md(long agent, long regDlist, long[] data, long[] len, long optArgs);

    /** Wires up the backends' connections to a loaded peer now, rather than on the first transfer to it. */
    static native int nixl_capi_agent_make_connection(long agent, String remoteAgent, long optArgs);

    // --- notifications ---
    static native int nixl_capi_create_notif_map(long[] map);

    static native int nixl_capi_destroy_notif_map(long map);

    static native int nixl_capi_get_notifs(long agent, long map, long optArgs);

    static native int nixl_capi_notif_map_size(long map, long[] size);

    static native int nixl_capi_notif_map_get_agent_at(long map, long index, long[] agentName);

    static native int nixl_capi_notif_map_get_notifs_size(long map, String agentName, long[] size);

    static native int nixl_capi_notif_map_get_notif(long map, String agentName, long index, long[] data,
            long[] len);

    static native int nixl_capi_notif_map_clear(long map);

    /** Sends {@code data} to a loaded peer as a notification, with no transfer. */
    static native int nixl_capi_gen_notif(long agent, String remoteAgent, byte[] data, long len, long optArgs);
}
