package io.nixlconnect.transport.nixl;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * What the NIXL backend logs (its lines start "NIXL agent NAME:") while a test runs, read per agent: agents of
 * earlier tests may still log from their own threads (a drain warning seconds later), so a test reads only its
 * agent's lines, from a copy taken under the appender's lock.
 */
final class AgentLogCapture implements AutoCloseable {

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(NixlAgentCore.class);
    private final Level levelBefore = logger.getLevel();

    /** Captures from {@code level} up until {@link #close}. */
    AgentLogCapture(Level level) {
        logger.setLevel(level);
        appender.start();
        logger.addAppender(appender);
    }

    /** The lines logged for agent {@code name}, oldest first. */
    List<ILoggingEvent> of(String name) {
        String prefix = "NIXL agent " + name + ":";
        synchronized (appender) {
            return appender.list.stream().filter(event -> event.getFormattedMessage().startsWith(prefix)).toList();
        }
    }

    /** How many warnings were logged for agent {@code name}. */
    long warnings(String name) {
        return of(name).stream().filter(event -> event.getLevel() == Level.WARN).count();
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        logger.setLevel(levelBefore);
    }
}
