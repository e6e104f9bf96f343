package io.nixlconnect.dynamo;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.nixlconnect.NixlConnectException;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module's boundaries: it uses the core only through the core's public API ({@code io.nixlconnect}), never its
 * transport SPI, backends or internals; its own public surface is the list below (everything else lives in
 * {@code io.nixlconnect.dynamo.internal..}); every exception it throws is a {@link DynamoException}.
 */
class DynamoApiBoundaryTest {

    private static final String API = "io.nixlconnect.dynamo";

    private static JavaClasses classes;

    @BeforeAll
    static void importMainClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(API);
    }

    @Test
    void usesTheCoreOnlyThroughItsPublicApi() {
        noClasses().that().resideInAPackage(API + "..").should().dependOnClassesThat()
                .resideInAnyPackage("io.nixlconnect.transport..", "io.nixlconnect.internal..", "io.nixlconnect.cuda..",
                        "io.nixlconnect.autoconfigure..")
                .check(classes);
        for (JavaClass type : classes) {
            type.getDirectDependenciesFromSelf().forEach(dependency -> {
                JavaClass target = dependency.getTargetClass();
                if (target.getPackageName().equals("io.nixlconnect")) {
                    assertThat(target.getModifiers()).as("%s uses %s", type.getName(), target.getName())
                            .contains(JavaModifier.PUBLIC);
                }
            });
        }
    }

    @Test
    void thePublicPackageExportsExactlyTheseTypes() {
        Set<String> types = new TreeSet<>();
        for (JavaClass type : classes) {
            if (type.getPackageName().equals(API) && type.getModifiers().contains(JavaModifier.PUBLIC)) {
                types.add(type.getName().substring(API.length() + 1));
            }
        }
        assertThat(types).containsExactly("DiscoveryBackend", "DynamoCancelledException", "DynamoClient",
                "DynamoCounters", "DynamoDiscoveryException", "DynamoException", "DynamoHandler", "DynamoInstance",
                "DynamoInstanceUnavailableException", "DynamoListener", "DynamoProtocolException", "DynamoRefusedException",
                "DynamoRequest", "DynamoResponder", "DynamoResponse", "DynamoRuntime", "DynamoSettings",
                "DynamoSettings$Builder", "DynamoStreamException", "DynamoTimeoutException", "DynamoValues",
                "DynamoWorkerException", "EncodeReply", "EndpointId", "PayloadCodec", "ResponseStream", "RouterMode",
                "ServedEndpoint");
    }

    @Test
    void theApiDoesNotShowItsLibrariesTypes() {
        noClasses().that().resideInAPackage(API).and().arePublic().should().dependOnClassesThat()
                .resideInAnyPackage("tools.jackson..", "org.msgpack..", "java.net.http..")
                .check(classes);
    }

    @Test
    void everyPublicThrowableIsADynamoExceptionAndANixlConnectException() {
        for (JavaClass type : classes) {
            if (type.getModifiers().contains(JavaModifier.PUBLIC) && type.isAssignableTo(Throwable.class)) {
                // Internals may signal I/O conditions to each other (a frame's timeout); those never leave them.
                boolean internalIo = type.getPackageName().startsWith(API + ".internal")
                        && type.isAssignableTo(java.io.IOException.class);
                assertThat(type.isAssignableTo(DynamoException.class) || internalIo).as(type.getName()).isTrue();
            }
        }
        assertThat(NixlConnectException.class).isAssignableFrom(DynamoException.class);
    }

    @Test
    void publicPackagesAreNullMarked() {
        assertThat(classes.get(API + ".package-info").isAnnotatedWith(NullMarked.class)).isTrue();
    }
}
