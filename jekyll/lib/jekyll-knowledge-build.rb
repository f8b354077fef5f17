# frozen_string_literal: true

# jekyll-knowledge-build: after Jekyll writes the site, index its knowledge boxes with knowledge-build.
#
# Runs `knowledge-build build --no-progress --site <source> --output <destination>/<output_dir>`, so the
# search artifacts (and knowledge/latest.json) are published with the site. Configured in _config.yml:
#
#   knowledge_build:
#     enabled: true                 # false: skip indexing
#     command: knowledge-build      # how to run the tool; a relative path is taken from the site source
#     output_dir: knowledge/v2      # inside the destination
#     embedder: local               # optional: passed as --embedder (local, openai, openai-compatible)
#     args: []                      # optional: more arguments for `knowledge-build build`
#     fail_on_error: true           # false: a failed index build is a warning, the site still builds
#
# The KNOWLEDGE_BUILD_COMMAND environment variable overrides `command`.
#
# This one file is the whole plugin: the gem loads it (`plugins: [jekyll-knowledge-build]`), and a site
# without the gem copies it into _plugins/. Loaded twice (gem and copy), it registers its hook once.

return if defined?(KnowledgeBuild::JekyllPlugin::VERSION)

require "open3"
require "shellwords"

module KnowledgeBuild
  module JekyllPlugin
    VERSION = "0.1.0"
    TOPIC = "knowledge-build:"

    module_function

    def run(site)
      config = settings(site)
      return unless config.fetch("enabled", true)

      output = File.join(site.dest, config.fetch("output_dir", "knowledge/v2").to_s)
      # --no-progress: the output is captured and logged after the build, so progress lines would only
      # arrive at the end, as warnings
      args = command_for(site, config) + ["build", "--no-progress", "--site", site.source, "--output", output] +
             extra_args(config)
      Jekyll.logger.info TOPIC, "indexing #{site.source} into #{output}"
      stdout, stderr, status = capture(args)
      if status&.success?
        stdout.each_line { |line| Jekyll.logger.info TOPIC, line.chomp }
        stderr.each_line { |line| Jekyll.logger.warn TOPIC, line.chomp }
      else
        fail_or_warn(config, stdout + stderr)
      end
    end

    def settings(site)
      config = site.config.fetch("knowledge_build", {}) || {}
      return config if config.is_a?(Hash)

      raise Jekyll::Errors::FatalException,
            "knowledge-build: knowledge_build in _config.yml must be a mapping (enabled, command, output_dir, " \
            "embedder, args, fail_on_error), not #{config.inspect}. Fix: indent its keys under knowledge_build:."
    end

    def command_for(site, config)
      override = ENV.fetch("KNOWLEDGE_BUILD_COMMAND", "").strip
      words = Shellwords.split(override.empty? ? config.fetch("command", "knowledge-build").to_s : override)
      if words.empty?
        raise Jekyll::Errors::FatalException,
              "knowledge-build: knowledge_build.command in _config.yml is empty. Fix: set it to knowledge-build " \
              "or the path of the tool (or remove it)."
      end
      words[0] = File.expand_path(words[0], site.source) if words[0].include?("/") && !File.absolute_path?(words[0])
      words
    end

    def extra_args(config)
      embedder = config["embedder"].to_s.strip
      args = config.fetch("args", []) || []
      args = Shellwords.split(args) if args.is_a?(String)
      unless args.is_a?(Array)
        raise Jekyll::Errors::FatalException,
              "knowledge-build: args under knowledge_build in _config.yml must be a list of arguments, not " \
              "#{args.inspect}. Fix: args: [--sections, \"off\"]."
      end
      (embedder.empty? ? [] : ["--embedder", embedder]) + args.map(&:to_s)
    end

    def capture(args)
      Open3.capture3(*args)
    rescue Errno::ENOENT, Errno::EACCES => e
      ["", "#{args.first} could not be run (#{e.message}). Install knowledge-build " \
           "(pip install 'knowledge-build[local]', or make install in its repository) or set " \
           "knowledge_build.command in _config.yml (or KNOWLEDGE_BUILD_COMMAND).", nil]
    end

    def fail_or_warn(config, message)
      text = "knowledge-build failed:\n#{message.strip}"
      raise Jekyll::Errors::FatalException, text, [] if config.fetch("fail_on_error", true)

      Jekyll.logger.warn TOPIC, text
    end
  end
end

Jekyll::Hooks.register :site, :post_write do |site|
  KnowledgeBuild::JekyllPlugin.run(site)
end
