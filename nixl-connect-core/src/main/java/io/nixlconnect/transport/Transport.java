package io.nixlconnect.transport;

/**
 * A transport backend: a factory of agents. One instance per {@link io.nixlconnect.Connector}.
 */
public interface Transport extends AutoCloseable {

    /** Short backend name, as shown in health details and logs: {@code embedded} or {@code nixl}. */
    String name();

    /**
     * Creates a new agent. Agents are long-lived: a connector creates one per connection and reuses
     * it for every operation.
     *
     * @param agentName unique name of the agent, carried in its metadata
     */
    TransportAgent createAgent(String agentName);

    /** Releases whatever the backend holds beyond its agents (threads, native libraries). */
    @Override
    void close();
}
