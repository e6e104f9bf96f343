package io.nixlconnect.autoconfigure.observation;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The one observation nixl-connect makes: {@code nixl.transfer}, one per operation from its creation to its
 * end. With Boot's default meter handler it is the {@code nixl.transfer} timer (tagged with the low-cardinality
 * keys plus {@code error}) and the {@code nixl.transfer.active} long-task timer; with a tracer, a span.
 */
public enum NixlTransferObservationDocumentation implements ObservationDocumentation {

    /** A READ or WRITE operation, active or passive. */
    TRANSFER {
        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
            return DefaultNixlTransferObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return LowCardinalityKeyNames.values();
        }

        @Override
        public KeyName[] getHighCardinalityKeyNames() {
            return HighCardinalityKeyNames.values();
        }
    };

    /** Keys with few values: they become meter tags. */
    public enum LowCardinalityKeyNames implements KeyName {

        /** {@code read} or {@code write}. */
        KIND("kind"),
        /** {@code active} (moves the bytes) or {@code passive} (publishes its buffers). */
        ROLE("role"),
        /** {@code cpu}, {@code cuda} or {@code xpu}: the memory of the local buffers. */
        DEVICE("device"),
        /** {@code embedded} or {@code nixl}. */
        BACKEND("backend"),
        /**
         * The bean name of the operation's connector, as Boot tags a DataSource's meters: present when the connectors
         * are the application's beans (always, with the auto-configuration), absent for one observed by hand.
         */
        NAME("name"),
        /** {@code complete}, {@code cancelled}, {@code timeout} or {@code errored}; present once the operation ended. */
        OUTCOME("outcome"),
        /**
         * How the bytes moved: {@code cross-memory-attach} or {@code tcp} (embedded transport), {@code nixl};
         * {@code none} when none moved. Present once the operation ended.
         */
        PATH("path"),

        /**
         * What moved the bytes, present once the operation ended: the plugin NIXL chose for the transfer (e.g.
         * {@code UCX}), {@code tcp} on the embedded transport, {@code none} where the transport did not say (the
         * passive side never learns its peer's path). An operation's {@code attributes()} call it {@code backend}.
         */
        PLUGIN("plugin");

        private final String name;

        LowCardinalityKeyNames(String name) {
            this.name = name;
        }

        @Override
        public String asString() {
            return name;
        }
    }

    /** Keys with a value per operation: span attributes only. */
    public enum HighCardinalityKeyNames implements KeyName {

        /**
         * The fingerprint of the notification key the passive side waits for
         * ({@code Operation.notificationKeyFingerprint()}), the same on both sides. Never the key itself: on the
         * embedded transport the key opens the passive side's memory, and traces are exported and kept.
         */
        NOTIFICATION_KEY_FINGERPRINT("nixl.notification_key.fingerprint"),
        /** Bytes over the local descriptors. */
        BYTES("nixl.bytes");

        private final String name;

        HighCardinalityKeyNames(String name) {
            this.name = name;
        }

        @Override
        public String asString() {
            return name;
        }
    }
}
