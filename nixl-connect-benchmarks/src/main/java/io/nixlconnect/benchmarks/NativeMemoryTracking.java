package io.nixlconnect.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * This JVM's native memory tracking (started with {@code -XX:NativeMemoryTracking=summary}), asked in-process as
 * {@code jcmd PID VM.native_memory} would: what the JVM itself committed since a baseline, by category. Tells growth
 * of the JVM (code, metaspace, threads, GC) from native memory outside it (NIXL, UCX, the C allocator), which RSS
 * alone cannot.
 */
final class NativeMemoryTracking {

    private static final Pattern TOTAL = Pattern.compile("Total: reserved=\\d+KB(?: [+-]\\d+KB)?, committed=(\\d+)KB(?: ([+-]\\d+)KB)?");
    private static final Pattern CATEGORY = Pattern.compile(
            "^-\\s+(.+?) \\(reserved=\\d+KB(?: [+-]\\d+KB)?, committed=\\d+KB(?: ([+-]\\d+)KB)?", Pattern.MULTILINE);
    /** Categories that moved by less are left out of the report. */
    private static final long SHOWN_KIB = 256;

    private NativeMemoryTracking() {
    }

    static void baseline() {
        command("baseline");
    }

    /**
     * "JVM native memory (NMT) committed +N KiB since warm-up (Code +a KiB, ...)", or why it is not known (the JVM was
     * started without native memory tracking).
     */
    static String growthSinceBaseline() {
        String diff = command("summary.diff");
        Matcher total = TOTAL.matcher(diff);
        if (!total.find()) {
            return "JVM native memory (NMT): " + diff.strip().lines().findFirst().orElse("no answer");
        }
        List<String> moved = new ArrayList<>();
        Matcher category = CATEGORY.matcher(diff);
        while (category.find()) {
            long change = category.group(2) == null ? 0 : Long.parseLong(category.group(2));
            if (Math.abs(change) >= SHOWN_KIB) {
                moved.add(category.group(1).strip() + " " + (change > 0 ? "+" : "") + change + " KiB");
            }
        }
        String change = total.group(2) == null ? "+0" : total.group(2);
        return "JVM native memory (NMT) committed " + change + " KiB since warm-up"
                + (moved.isEmpty() ? "" : " (" + String.join(", ", moved) + ")");
    }

    private static String command(String argument) {
        try {
            return (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {new String[] {argument}}, new String[] {String[].class.getName()});
        } catch (JMException e) {
            return "not available: " + e;
        }
    }
}
