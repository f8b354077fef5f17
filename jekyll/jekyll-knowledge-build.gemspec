# frozen_string_literal: true

# The version lives in the plugin file itself, so that a copy in _plugins/ knows it too.
version = File.read(File.join(__dir__, "lib", "jekyll-knowledge-build.rb"))[/VERSION = "([^"]+)"/, 1]

Gem::Specification.new do |spec|
  spec.name = "jekyll-knowledge-build"
  spec.version = version
  spec.summary = "Index a Jekyll site's knowledge boxes with knowledge-build on every jekyll build"
  spec.description = "A Jekyll plugin that runs `knowledge-build build` after Jekyll writes the site, so the " \
                     "search artifacts (knowledge/v2/, knowledge/latest.json) are published with the pages."
  spec.authors = ["knowledge-build contributors"]
  spec.license = "MIT"
  spec.homepage = "https://github.com/OWNER/knowledge-build"
  spec.metadata = { "source_code_uri" => "https://github.com/OWNER/knowledge-build/tree/main/jekyll" }
  spec.files = ["lib/jekyll-knowledge-build.rb", "README.md", "LICENSE"]
  spec.require_paths = ["lib"]
  spec.required_ruby_version = ">= 2.7"
  # No runtime dependency: only Jekyll loads the plugin, so Jekyll is there; declaring it would make
  # `gem install` resolve Jekyll's own dependencies, which a distribution's Jekyll may not register as gems.
end
