package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Pins the public API of the core jar: every public or protected signature of every public type in
 * {@code io.nixlconnect}, {@code io.nixlconnect.transport}, {@code io.nixlconnect.cuda} and the backends' public
 * types (their settings and providers) is listed in {@code src/test/resources/public-api.txt}. A signature added,
 * removed or changed without that file being updated fails here, with the lines that differ.
 *
 * <p>A change on purpose: regenerate the file with {@code scripts/update-api-baseline.sh} (it runs this test with
 * {@code -DupdateApiBaseline=true}) and commit it with the change, so that the diff shows the API change for review.
 * The listing is built from reflection in a fixed order and spelling, so it reads the same on every JDK.
 */
class PublicApiBaselineTest {

    static final String BASELINE = "public-api.txt";
    static final String UPDATE_PROPERTY = "updateApiBaseline";
    private static final String REGENERATE = "scripts/update-api-baseline.sh";

    @Test
    void thePublicApiMatchesTheCommittedBaseline() throws IOException {
        List<String> current = listing();
        Path source = Path.of("src", "test", "resources", BASELINE);
        if (Boolean.getBoolean(UPDATE_PROPERTY)) {
            Files.write(source, current, StandardCharsets.UTF_8);
            System.out.println("Wrote the public API baseline (" + current.size() + " lines) to " + source.toAbsolutePath());
            return;
        }
        List<String> baseline = baseline();
        if (!current.equals(baseline)) {
            fail(difference(baseline, current));
        }
    }

    /** The listing notices what it must: a public method is in it, a package-private type and member are not. */
    @Test
    void theListingHoldsPublicSignaturesOnly() {
        List<String> listing = listing();
        assertThat(listing).contains("class io.nixlconnect.Connector [final] implements java.lang.AutoCloseable",
                "  public io.nixlconnect.ReadOperation beginRead(io.nixlconnect.RdmaMetadata, io.nixlconnect.Descriptor[])");
        assertThat(listing).noneMatch(line -> line.contains("AbstractOperation"));
        assertThat(listing).noneMatch(line -> line.contains("class io.nixlconnect.Transports"));
        assertThat(listing).anyMatch(line -> line.startsWith("record io.nixlconnect.transport.embedded.EmbeddedSettings implements"));
    }

    static List<String> listing() {
        Set<String> typeNames = new TreeSet<>();
        for (JavaClass type : new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.nixlconnect")) {
            if (!type.isAnonymousClass() && !type.isLocalClass()) {
                typeNames.add(type.getName());
            }
        }
        List<String> lines = new ArrayList<>();
        for (String name : typeNames) {
            Class<?> type = load(name);
            if (isExported(type)) {
                lines.add(header(type));
                lines.addAll(members(type));
            }
        }
        return lines;
    }

    private static List<String> baseline() throws IOException {
        try (var in = PublicApiBaselineTest.class.getClassLoader().getResourceAsStream(BASELINE)) {
            assertThat(in).as("src/test/resources/" + BASELINE + " is missing: run " + REGENERATE).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }

    private static String difference(List<String> baseline, List<String> current) {
        Set<String> removed = new LinkedHashSet<>(qualified(baseline));
        qualified(current).forEach(removed::remove);
        Set<String> added = new LinkedHashSet<>(qualified(current));
        qualified(baseline).forEach(added::remove);
        StringBuilder message = new StringBuilder("The public API changed without its baseline (src/test/resources/")
                .append(BASELINE).append(").\nIf the change is meant, run ").append(REGENERATE)
                .append(" and commit the file with it; if not, undo it.\n");
        removed.forEach(line -> message.append("- ").append(line).append('\n'));
        added.forEach(line -> message.append("+ ").append(line).append('\n'));
        if (removed.isEmpty() && added.isEmpty()) {
            message.append("(the same lines, in another order)\n");
        }
        return message.toString();
    }

    /** Each member line prefixed with its type's name, so that a diff says where and the same member of two types differs. */
    private static List<String> qualified(List<String> listing) {
        List<String> lines = new ArrayList<>();
        String owner = "";
        for (String line : listing) {
            if (line.startsWith("  ")) {
                lines.add(owner + ":" + line);
            } else {
                owner = line.substring(line.indexOf(' ') + 1).split(" ")[0];
                lines.add(line);
            }
        }
        return lines;
    }

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, PublicApiBaselineTest.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Public, and every enclosing type public too (a public nested type of a package-private class is hidden). */
    private static boolean isExported(Class<?> type) {
        for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return !type.isSynthetic();
    }

    private static String header(Class<?> type) {
        String kind = type.isAnnotation() ? "@interface" : type.isInterface() ? "interface" : type.isEnum() ? "enum"
                : type.isRecord() ? "record" : "class";
        int modifiers = type.getModifiers() & ~Modifier.PUBLIC & ~Modifier.INTERFACE;
        if (type.isInterface()) {
            modifiers &= ~Modifier.ABSTRACT;
        }
        if (type.isEnum() || type.isRecord()) {
            modifiers &= ~Modifier.FINAL;
        }
        StringBuilder line = new StringBuilder(kind).append(' ').append(type.getName())
                .append(typeParameters(type.getTypeParameters()));
        String words = Modifier.toString(modifiers);
        if (type.isSealed()) {
            words = (words.isEmpty() ? "" : words + " ") + "sealed";
        }
        if (!words.isEmpty()) {
            line.append(" [").append(words).append(']');
        }
        Type superclass = type.getGenericSuperclass();
        while (superclass != null && !isExported(rawClass(superclass))) { // name what a caller can see
            superclass = rawClass(superclass).getGenericSuperclass();
        }
        if (superclass != null && superclass != Object.class && !type.isEnum() && !type.isRecord()) {
            line.append(" extends ").append(superclass.getTypeName());
        }
        List<Type> interfaces = new ArrayList<>(Arrays.asList(type.getGenericInterfaces()));
        for (Class<?> hidden = type.getSuperclass(); hidden != null && !isExported(hidden); hidden = hidden.getSuperclass()) {
            interfaces.addAll(Arrays.asList(hidden.getGenericInterfaces()));
        }
        if (!interfaces.isEmpty()) {
            line.append(type.isInterface() ? " extends " : " implements ")
                    .append(interfaces.stream().map(Type::getTypeName).collect(Collectors.joining(", ")));
        }
        if (type.isSealed()) {
            line.append(" permits ").append(String.join(", ", visiblePermitted(type)));
        }
        return line.toString();
    }

    /** The permitted subtypes a caller can see: a hidden one is replaced by the visible ones it permits. */
    private static Set<String> visiblePermitted(Class<?> type) {
        Set<String> names = new TreeSet<>();
        for (Class<?> permitted : type.getPermittedSubclasses()) {
            if (isExported(permitted)) {
                names.add(permitted.getName());
            } else if (permitted.isSealed()) {
                names.addAll(visiblePermitted(permitted));
            }
        }
        return names;
    }

    /** What a caller can use: the type's own members and those of the hidden superclasses between it and the next visible one. */
    private static List<String> members(Class<?> type) {
        Set<String> members = new TreeSet<>(declaredMembers(type, true));
        for (Class<?> hidden = type.getSuperclass(); hidden != null && !isExported(hidden); hidden = hidden.getSuperclass()) {
            members.addAll(declaredMembers(hidden, false)); // its constructors serve only its subclasses
        }
        return new ArrayList<>(members);
    }

    private static Class<?> rawClass(Type type) {
        return type instanceof java.lang.reflect.ParameterizedType parameterized ? (Class<?>) parameterized.getRawType()
                : (Class<?>) type;
    }

    private static Set<String> declaredMembers(Class<?> type, boolean withConstructors) {
        Set<String> members = new TreeSet<>();
        for (Field field : type.getDeclaredFields()) {
            if (visible(field.getModifiers()) && !field.isSynthetic()) {
                members.add("  " + modifiers(field.getModifiers() & Modifier.fieldModifiers())
                        + field.getGenericType().getTypeName() + " " + field.getName());
            }
        }
        if (withConstructors && !type.isEnum()) { // an enum's constructors cannot be called
            for (Constructor<?> constructor : type.getDeclaredConstructors()) {
                if (visible(constructor.getModifiers()) && !constructor.isSynthetic()) {
                    members.add("  " + modifiers(constructor.getModifiers() & Modifier.constructorModifiers())
                            + typeParameters(constructor.getTypeParameters()) + type.getSimpleName()
                            + parameters(constructor) + exceptions(constructor));
                }
            }
        }
        for (Method method : type.getDeclaredMethods()) {
            if (visible(method.getModifiers()) && !method.isSynthetic() && !method.isBridge()) {
                int modifiers = method.getModifiers() & Modifier.methodModifiers();
                if (type.isInterface()) {
                    modifiers &= ~Modifier.ABSTRACT;
                }
                members.add("  " + modifiers(modifiers) + (method.isDefault() ? "default " : "")
                        + typeParameters(method.getTypeParameters()) + method.getGenericReturnType().getTypeName()
                        + " " + method.getName() + parameters(method) + exceptions(method));
            }
        }
        return members;
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static String modifiers(int modifiers) {
        String words = Modifier.toString(modifiers);
        return words.isEmpty() ? "" : words + " ";
    }

    private static String typeParameters(TypeVariable<?>[] variables) {
        if (variables.length == 0) {
            return "";
        }
        return Arrays.stream(variables).map(variable -> {
            Type[] bounds = variable.getBounds();
            boolean onlyObject = bounds.length == 1 && bounds[0] == Object.class;
            return onlyObject ? variable.getName() : variable.getName() + " extends "
                    + Arrays.stream(bounds).map(Type::getTypeName).collect(Collectors.joining(" & "));
        }).collect(Collectors.joining(", ", "<", ">")) + (variables[0].getGenericDeclaration() instanceof Class ? "" : " ");
    }

    private static String parameters(Executable executable) {
        return Arrays.stream(executable.getGenericParameterTypes()).map(Type::getTypeName)
                .collect(Collectors.joining(", ", "(", ")"));
    }

    private static String exceptions(Executable executable) {
        Type[] exceptions = executable.getGenericExceptionTypes();
        return exceptions.length == 0 ? "" : " throws "
                + Arrays.stream(exceptions).map(Type::getTypeName).collect(Collectors.joining(", "));
    }
}
