package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.jna.Pointer;
import org.junit.jupiter.api.Test;

/**
 * Every native method of {@link NixlCapi} against NIXL's C declarations: same functions, same number of
 * parameters, and each Java type one that JNA passes the way the C type is passed on x86-64. A wrong
 * arity is undefined behaviour that may pass by luck (an extra trailing argument lands in an unused
 * register), so it is caught here rather than on some other ABI.
 *
 * <p>The declarations come from {@code nixl-capi-signatures.txt}, a list maintained from NIXL's
 * {@code wrapper.h} (the wheel ships no header). When {@code NIXL_CAPI_HEADER} names a copy of the header,
 * the list is checked against it too.
 */
class NixlCapiSignatureTest {

    private static final Pattern DECLARATION =
            Pattern.compile("(nixl_capi_status_t|bool)\\s+(nixl_capi_\\w+)\\s*\\(([^)]*)\\)");

    @Test
    void everyBoundFunctionMatchesItsCDeclaration() throws IOException {
        Map<String, Declaration> declared = maintainedList();
        Map<String, Method> bound = boundFunctions();

        assertThat(bound.keySet()).as("functions bound by NixlCapi").containsExactlyInAnyOrderElementsOf(declared.keySet());
        List<String> mismatches = new ArrayList<>();
        for (Method method : bound.values()) {
            Declaration c = declared.get(method.getName());
            String problem = compare(method, c);
            if (problem != null) {
                mismatches.add(method.getName() + ": " + problem);
            }
        }
        assertThat(mismatches).as("bound signatures that differ from NIXL's C API").isEmpty();
    }

    @Test
    void everyBoundFunctionIsARequiredSymbol() {
        assertThat(NixlCapi.REQUIRED_SYMBOLS).containsExactlyInAnyOrderElementsOf(boundFunctions().keySet());
    }

    @Test
    void theMaintainedListMatchesTheHeaderWhenOneIsGiven() throws IOException {
        String header = System.getenv("NIXL_CAPI_HEADER");
        assumeTrue(header != null && !header.isBlank(),
                "NIXL_CAPI_HEADER names no copy of NIXL's wrapper.h (the wheel ships none); checked against the maintained list only");
        String text = Files.readString(Path.of(header)).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
        Map<String, Declaration> fromHeader = parse(text, true);
        Map<String, Declaration> maintained = maintainedList();
        for (Declaration declaration : maintained.values()) {
            assertThat(fromHeader.get(declaration.name)).as("%s in %s", declaration.name, header).isEqualTo(declaration);
        }
    }

    /** nixl_capi_agent_config_t: two bools, then int listen_port (not a uint16), thread_sync, num_workers, two uint64, a bool. */
    @Test
    void theAgentConfigurationFollowsTheStructLayout() {
        java.nio.ByteBuffer cfg = java.nio.ByteBuffer.wrap(NixlCapi.agentConfig(true, 250, NixlCapi.THREAD_SYNC_STRICT))
                .order(java.nio.ByteOrder.LITTLE_ENDIAN);

        assertThat(cfg.capacity()).isEqualTo(40);
        assertThat(cfg.get(0)).as("enable_prog_thread").isEqualTo((byte) 1);
        assertThat(cfg.get(1)).as("enable_listen_thread").isZero();
        assertThat(cfg.getInt(4)).as("listen_port").isZero();
        assertThat(cfg.getInt(8)).as("thread_sync").isEqualTo(NixlCapi.THREAD_SYNC_STRICT);
        assertThat(cfg.getInt(12)).as("num_workers").isEqualTo(1);
        assertThat(cfg.getLong(16)).as("pthr_delay_us").isEqualTo(250);
        assertThat(cfg.get(32)).as("capture_telemetry (operation attributes)").isEqualTo((byte) 1);
    }

    @Test
    void theComparisonCatchesAnExtraParameter() throws Exception {
        Declaration c = parse("nixl_capi_status_t nixl_capi_create_reg_dlist(nixl_capi_mem_type_t, nixl_capi_reg_dlist_t*)",
                false).get("nixl_capi_create_reg_dlist");
        Method withSorted = WrongBindings.class.getDeclaredMethod("nixl_capi_create_reg_dlist", int.class, long[].class,
                boolean.class);

        assertThat(compare(withSorted, c)).contains("3 parameter(s), C has 2");
    }

    /** The binding the C API never had, kept here to show the comparison rejects it. */
    private static final class WrongBindings {
        @SuppressWarnings("unused")
        static int nixl_capi_create_reg_dlist(int memType, long[] dlist, boolean sorted) {
            return 0;
        }
    }

    // ---- comparing ---------------------------------------------------------------------------------

    private static String compare(Method method, Declaration c) {
        String returned = method.getReturnType().getName();
        String expectedReturn = c.returnType.equals("bool") ? "byte" : "int";
        if (!returned.equals(expectedReturn)) {
            return "returns " + returned + ", C returns " + c.returnType + " (bind as " + expectedReturn + ")";
        }
        Class<?>[] javaTypes = method.getParameterTypes();
        if (javaTypes.length != c.parameters.size()) {
            return javaTypes.length + " parameter(s), C has " + c.parameters.size() + " " + c.parameters;
        }
        for (int i = 0; i < javaTypes.length; i++) {
            List<Class<?>> allowed = javaTypesFor(c.parameters.get(i));
            if (!allowed.contains(javaTypes[i])) {
                return "parameter " + (i + 1) + " is " + javaTypes[i].getSimpleName() + ", C has " + c.parameters.get(i)
                        + " (bind as one of " + allowed.stream().map(Class::getSimpleName).toList() + ")";
            }
        }
        return null;
    }

    /** How JNA direct mapping may pass each C parameter type on x86-64 (LP64). */
    private static List<Class<?>> javaTypesFor(String c) {
        return switch (c) {
            case "bool" -> List.of(boolean.class);
            case "nixl_capi_mem_type_t", "nixl_capi_xfer_op_t", "int" -> List.of(int.class);
            case "size_t", "uintptr_t", "uint64_t" -> List.of(long.class);
            case "const char*" -> List.of(String.class);
            case "const int*" -> List.of(int[].class, Pointer.class);
            case "const void*", "const nixl_capi_agent_config_t*" -> List.of(byte[].class, Pointer.class);
            case "void**", "char**", "const char**", "const void**", "size_t*" -> List.of(long[].class);
            default -> {
                if (c.matches("nixl_capi_\\w+_t")) {
                    yield List.of(long.class);          // an opaque handle
                }
                if (c.matches("nixl_capi_\\w+_t\\*")) {
                    yield List.of(long[].class);        // an out-parameter for a handle
                }
                throw new AssertionError("no Java mapping known for C type " + c);
            }
        };
    }

    // ---- reading -------------------------------------------------------------------------------------

    private static Map<String, Method> boundFunctions() {
        Map<String, Method> bound = new TreeMap<>();
        for (Method method : NixlCapi.class.getDeclaredMethods()) {
            if (Modifier.isNative(method.getModifiers())) {
                bound.put(method.getName(), method);
            }
        }
        return bound;
    }

    private static Map<String, Declaration> maintainedList() throws IOException {
        try (InputStream in = NixlCapiSignatureTest.class.getResourceAsStream("/nixl-capi-signatures.txt")) {
            assertThat(in).as("nixl-capi-signatures.txt on the test classpath").isNotNull();
            StringBuilder text = new StringBuilder();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (!line.startsWith("#")) {
                    text.append(line).append('\n');
                }
            }
            return parse(text.toString(), false);
        }
    }

    /** Declarations in {@code text}; with names, each parameter's last identifier is its name and dropped. */
    private static Map<String, Declaration> parse(String text, boolean parametersNamed) {
        Map<String, Declaration> declarations = new LinkedHashMap<>();
        Matcher matcher = DECLARATION.matcher(text);
        while (matcher.find()) {
            List<String> parameters = new ArrayList<>();
            for (String parameter : matcher.group(3).split(",")) {
                String p = parameter.strip().replaceAll("\\s+", " ");
                if (p.isEmpty() || p.equals("void")) {
                    continue;
                }
                if (parametersNamed) {
                    p = p.replaceAll("\\s*\\b\\w+$", "");
                }
                parameters.add(p.replaceAll("\\s*\\*", "*").strip());
            }
            declarations.put(matcher.group(2), new Declaration(matcher.group(1), matcher.group(2), parameters));
        }
        return declarations;
    }

    private record Declaration(String returnType, String name, List<String> parameters) {
        @Override
        public String toString() {
            return returnType + " " + name + "(" + String.join(", ", parameters) + ")";
        }
    }
}
