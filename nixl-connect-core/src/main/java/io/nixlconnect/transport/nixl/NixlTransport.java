package io.nixlconnect.transport.nixl;

import io.nixlconnect.internal.RunOutResources;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The NIXL transport: agents backed by NIXL's C API through JNA. See {@code docs/nixl.md} for how
 * NIXL is found and configured.
 */
final class NixlTransport implements Transport {

    private final NixlSettings settings;
    private final NixlInstallation installation;
    private final Map<String, NixlAgentCore> agents = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private NixlTransport(NixlSettings settings, NixlInstallation installation) {
        this.settings = settings;
        this.installation = installation;
    }

    /**
     * Finds and loads NIXL.
     *
     * @throws TransportException if NIXL is not found (the message lists where it looked), is a stub
     *                            build, or is older than 1.1
     */
    static NixlTransport open(NixlSettings settings) {
        NixlSettings effective = settings == null ? NixlSettings.defaults() : settings;
        NixlInstallation installation = NixlLibraryLocator.forThisProcess().locate(effective);
        NixlNativeLibrary.load(installation, effective.ucxLogFile());
        NixlCudaSupport.logOnce();
        RunOutResources.prepare(); // what names a shortage of descriptors must load while there are some
        return new NixlTransport(effective, installation);
    }

    @Override
    public String name() {
        return "nixl";
    }

    /** Where NIXL was loaded from. */
    public String libraryDescription() {
        return installation.libraryName() + " (" + installation.source() + ")";
    }

    @Override
    public TransportAgent createAgent(String agentName) {
        NixlSettings.requireCString("agent name", agentName);
        if (closed) {
            throw new TransportException("NIXL transport is closed");
        }
        synchronized (agents) {
            if (agents.containsKey(agentName)) {
                throw new TransportException("a NIXL agent named '" + agentName + "' already exists in this"
                        + " transport; agent names must be unique");
            }
            NixlAgentCore core = new NixlAgentCore(agentName, settings,
                    closing -> agents.remove(closing.name(), closing));
            agents.put(agentName, core);
            return new NixlAgent(core);
        }
    }

    @Override
    public String toString() {
        return "NIXL transport: " + libraryDescription();
    }

    @Override
    public void close() {
        closed = true;
        List<NixlAgentCore> open;
        synchronized (agents) {
            open = new ArrayList<>(agents.values());
        }
        open.forEach(NixlAgentCore::close);
    }
}
