package io.nixlconnect.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
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
    private static final Set<String> COMPILER_CATEGORIES = Set.of("Code", "Compiler", "Arena Chunk");
    /** Categories that moved by less are left out of the report. */
    private static final long SHOWN_KIB = 256;

    private NativeMemoryTracking() {
    }

    static void baseline() {
        command("baseline");
    }

    /**
     * What the JVM committed since the baseline: a line for the report ("JVM native memory (NMT) committed +N KiB since
     * warm-up (Code +a KiB, ...)", or why it is not known: the JVM was started without native memory tracking) and the
     * growth of the just-in-time compiler's categories (Code, Compiler, Arena Chunk), which compiles later the more
     * loaded the machine is: memory that grows with the load, not with the operations.
     */
    static SoakConsumer.RuntimeGrowth growthSinceBaseline() {
        String diff = command("summary.diff");
        Matcher total = TOTAL.matcher(diff);
        if (!total.find()) {
            return new SoakConsumer.RuntimeGrowth(
                    "JVM native memory (NMT): " + diff.strip().lines().findFirst().orElse("no answer"), 0);
        }
        List<String> moved = new ArrayList<>();
        long compilerKiB = 0;
        Matcher category = CATEGORY.matcher(diff);
        while (category.find()) {
            String name = category.group(1).strip();
            long change = category.group(2) == null ? 0 : Long.parseLong(category.group(2));
            if (COMPILER_CATEGORIES.contains(name)) {
                compilerKiB += Math.max(0, change);
            }
            if (Math.abs(change) >= SHOWN_KIB) {
                moved.add(name + " " + (change > 0 ? "+" : "") + change + " KiB");
            }
        }
        String change = total.group(2) == null ? "+0" : total.group(2);
        return new SoakConsumer.RuntimeGrowth("JVM native memory (NMT) committed " + change + " KiB since warm-up"
                + (moved.isEmpty() ? "" : " (" + String.join(", ", moved) + ")"), compilerKiB);
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
