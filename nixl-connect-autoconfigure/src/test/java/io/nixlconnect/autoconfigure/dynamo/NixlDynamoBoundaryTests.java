package io.nixlconnect.autoconfigure.dynamo;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Dynamo integration's boundaries: it uses the core and the Dynamo module only through their public APIs
 * ({@code io.nixlconnect}, {@code io.nixlconnect.dynamo}), never their SPI, backends or internals; and it is the only
 * package of the auto-configuration that knows the Dynamo module, which is optional (an application without it
 * loads every other auto-configuration).
 */
class NixlDynamoBoundaryTests {

    private static final String PACKAGE = "io.nixlconnect.autoconfigure.dynamo";

    private static JavaClasses classes;

    @BeforeAll
    static void importMainClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.nixlconnect.autoconfigure");
    }

    @Test
    void usesTheCoreAndTheDynamoModuleOnlyThroughTheirPublicApis() {
        noClasses().that().resideInAPackage(PACKAGE).should().dependOnClassesThat()
                .resideInAnyPackage("io.nixlconnect.transport..", "io.nixlconnect.internal..", "io.nixlconnect.cuda..",
                        "io.nixlconnect.dynamo.internal..")
                .check(classes);
        int checked = 0;
        for (JavaClass type : classes) {
            if (!type.getPackageName().equals(PACKAGE)) {
                continue;
            }
            for (var dependency : type.getDirectDependenciesFromSelf()) {
                JavaClass target = dependency.getTargetClass();
                if (target.getPackageName().equals("io.nixlconnect")
                        || target.getPackageName().equals("io.nixlconnect.dynamo")) {
                    assertThat(target.getModifiers()).as("%s uses %s", type.getName(), target.getName())
                            .contains(JavaModifier.PUBLIC);
                    checked++;
                }
            }
        }
        assertThat(checked).as("dependencies on the public APIs checked").isPositive();
    }

    @Test
    void onlyThisPackageKnowsTheOptionalDynamoModule() {
        noClasses().that().resideInAPackage("io.nixlconnect.autoconfigure..").and().resideOutsideOfPackage(PACKAGE)
                .should().dependOnClassesThat().resideInAnyPackage("io.nixlconnect.dynamo..").check(classes);
    }
}
