package io.nixlconnect;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.TransportProvider;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.TransportUnavailableException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Opens the first usable transport of a connector's preference list; knows the backends only through the SPI. */
final class Transports {

    private static final Logger log = LoggerFactory.getLogger(Transports.class);

    private Transports() {
    }

    /** Every backend on the class path with its default settings, in preference order (NIXL, then embedded). */
    static List<TransportSettings> defaults() {
        List<TransportProvider> providers = new ArrayList<>();
        ServiceLoader.load(TransportProvider.class, Transports.class.getClassLoader()).forEach(providers::add);
        providers.sort(Comparator.comparingInt(TransportProvider::preference));
        return providers.stream().map(TransportProvider::defaultSettings).toList();
    }

    /**
     * Opens the first transport in {@code preference} that can be used here. One that is unavailable (NIXL not
     * installed) is skipped with a log line while others remain; one that is there but fails to start fails it all.
     *
     * @throws BackendUnavailableException if the last transport of the list is unavailable
     * @throws TransportFailureException   if a transport failed to start
     */
    static Transport open(List<TransportSettings> preference) {
        for (int i = 0; i < preference.size(); i++) {
            TransportSettings settings = preference.get(i);
            boolean last = i == preference.size() - 1;
            try {
                Transport transport = settings.open();
                if (preference.size() > 1) {
                    log.info("nixl-connect: chose the {} transport ({})", transport.name(), transport);
                }
                return transport;
            } catch (TransportUnavailableException | LinkageError e) {
                if (last) {
                    throw new BackendUnavailableException(settings.name(), "Transport '" + settings.name()
                            + "' was requested but cannot be used: " + e.getMessage()
                            + (preference.size() == 1 ? " Or choose another transport (backend 'auto' or 'embedded')." : ""),
                            e);
                }
                log.info("nixl-connect: the {} transport is not available ({}); trying {}", settings.name(),
                        firstLine(e.getMessage()), preference.get(i + 1).name());
            } catch (TransportException e) { // there, but could not start (a port taken): not skipped
                throw TransportFailureException.of(settings.name(), "start", e);
            }
        }
        throw new IllegalStateException("no transport to open"); // ConnectorOptions never holds an empty list
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "no reason given";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }
}
