// Validate api/openapi.yaml with @apidevtools/swagger-parser: the OpenAPI 3.0
// JSON schema, then every $ref resolved. Prints the verdict; exit 1 on errors.
// Run by `make check-openapi`, which installs the validator with npm.
"use strict";
const path = require("path");
const SwaggerParser = require("@apidevtools/swagger-parser");

const file = process.argv[2] || path.join(__dirname, "..", "..", "api", "openapi.yaml");
SwaggerParser.validate(file)
  .then((api) => {
    const n = Object.keys(api.paths).length;
    console.log(`${file}: valid OpenAPI ${api.openapi} (${n} paths) per @apidevtools/swagger-parser`);
  })
  .catch((err) => {
    console.error(`${file}: INVALID\n${err.message}`);
    if (err.details) console.error(JSON.stringify(err.details, null, 2).slice(0, 20000));
    process.exit(1);
  });
