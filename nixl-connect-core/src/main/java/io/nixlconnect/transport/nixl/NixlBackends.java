package io.nixlconnect.transport.nixl;

import com.sun.jna.Pointer;
import io.nixlconnect.transport.TransportException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import static io.nixlconnect.transport.nixl.NixlAgentCore.check;

/**
 * The backend plugins of one NIXL agent (UCX, ...): created with the agent from the settings' plugins and
 * parameters, asked which of them NIXL chose for a request, and counted per ended transfer (health). Every method
 * that takes the agent's handle runs while that agent lives: in its constructor, or under its lifecycle lock.
 */
final class NixlBackends {

    private final List<String> plugins;
    private final Map<String, String> parameters;
    /** The {@code nixl_capi_backend_s} wrappers made by {@link #create}, freed by {@link #destroy}. */
    private final List<Long> wrappers = new ArrayList<>();
    /** NIXL's own handle ({@code nixlBackendH*}) of each backend, in {@link #plugins} order; set once. */
    private long[] handles = new long[0];
    /** Ended transfers by the backend NIXL chose for them. */
    private final Map<String, LongAdder> transfersByBackend = new ConcurrentHashMap<>();

    NixlBackends(List<String> plugins, Map<String, String> parameters) {
        this.plugins = plugins;
        this.parameters = parameters;
    }

    /** Creates each plugin's backend on {@code agent}; on failure, those created so far stay for {@link #destroy}. */
    void create(long agent) {
        for (String plugin : plugins) {
            wrappers.add(createBackend(agent, plugin));
        }
        long[] inner = new long[wrappers.size()];
        for (int i = 0; i < inner.length; i++) {
            inner[i] = innerBackend(wrappers.get(i));
        }
        handles = inner;
    }

    private long createBackend(long agent, String plugin) {
        long[] mems = new long[1];
        long[] params = new long[1];
        int status = NixlCapi.nixl_capi_get_plugin_params(agent, plugin, mems, params);
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL backend plugin '" + plugin + "' is not available ("
                    + NixlCapi.statusName(status) + "); available plugins: " + availablePlugins(agent)
                    + "; check NIXL_PLUGIN_DIR / NixlSettings.pluginDir");
        }
        try {
            for (Map.Entry<String, String> parameter : parameters.entrySet()) {
                check(NixlCapi.nixl_capi_params_add(params[0], parameter.getKey(), parameter.getValue()),
                        "set backend parameter " + parameter.getKey());
            }
            long[] backend = new long[1];
            check(NixlCapi.nixl_capi_create_backend(agent, plugin, params[0], backend),
                    "create NIXL backend '" + plugin + "' with parameters " + parameters);
            return backend[0];
        } finally {
            NixlCapi.nixl_capi_destroy_mem_list(mems[0]);
            NixlCapi.nixl_capi_destroy_params(params[0]);
        }
    }

    /** The plugins NIXL found (in its plugin directory); empty when it cannot say. */
    static List<String> availablePlugins(long agent) {
        long[] list = new long[1];
        if (NixlCapi.nixl_capi_get_available_plugins(agent, list) != NixlCapi.SUCCESS) {
            return List.of();
        }
        try {
            long[] size = new long[1];
            NixlCapi.nixl_capi_string_list_size(list[0], size);
            List<String> names = new ArrayList<>();
            long[] str = new long[1];
            for (long i = 0; i < size[0]; i++) {
                if (NixlCapi.nixl_capi_string_list_get(list[0], i, str) == NixlCapi.SUCCESS && str[0] != 0) {
                    names.add(new Pointer(str[0]).getString(0));
                }
            }
            return names;
        } finally {
            NixlCapi.nixl_capi_destroy_string_list(list[0]);
        }
    }

    /** The {@code nixlBackendH*} a {@code nixl_capi_backend_s} wraps: that struct's one field. */
    private static long innerBackend(long wrapper) {
        return new Pointer(wrapper).getLong(0);
    }

    /**
     * Which of these backends NIXL chose for a request ({@code queryXferBackend}), by its plugin name, counted; null
     * when the library cannot say. Call with the request alive.
     */
    String chosen(long agent, long request) {
        if (handles.length == 1) {
            return counted(plugins.get(0)); // NIXL can only have chosen the one there is
        }
        long[] chosen = new long[1];
        if (NixlCapi.queryXferBackend(agent, request, chosen) != NixlCapi.SUCCESS || chosen[0] == 0) {
            return null;
        }
        try {
            long inner = innerBackend(chosen[0]);
            long[] known = handles;
            for (int i = 0; i < known.length; i++) {
                if (known[i] == inner) {
                    return counted(plugins.get(i));
                }
            }
            return null;
        } finally {
            NixlCapi.nixl_capi_destroy_backend(chosen[0]); // frees the wrapper only, not the backend
        }
    }

    private String counted(String backend) {
        transfersByBackend.computeIfAbsent(backend, b -> new LongAdder()).increment();
        return backend;
    }

    /** Ended transfers by the backend NIXL chose for them, by plugin name. */
    Map<String, Long> transfersByBackend() {
        Map<String, Long> byBackend = new TreeMap<>();
        transfersByBackend.forEach((backend, count) -> byBackend.put(backend, count.sum()));
        return byBackend;
    }

    /** Frees the wrappers; call just before the agent is destroyed, which tears the backends down itself. */
    void destroy() {
        for (long backend : wrappers) {
            NixlCapi.nixl_capi_destroy_backend(backend);
        }
        wrappers.clear();
    }
}
