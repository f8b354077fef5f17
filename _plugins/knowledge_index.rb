# frozen_string_literal: true

# knowledge-build's Jekyll plugin: after Jekyll writes the site, index its knowledge boxes.
#
# Runs `knowledge-build build --site <source> --output <destination>/knowledge/v2`, so the search
# artifacts (and knowledge/latest.json) are published with the site. Configured in _config.yml:
#
#   knowledge_build:
#     enabled: true                 # false: skip indexing
#     command: knowledge-build      # how to run the tool; a relative path is taken from the site source
#     output_dir: knowledge/v2      # inside the destination
#     fail_on_error: true           # false: a failed index build is a warning, the site still builds
#
# The KNOWLEDGE_BUILD_COMMAND environment variable overrides `command`.

require "open3"
require "shellwords"

module KnowledgeBuild
  module JekyllPlugin
    module_function

    def run(site)
      config = site.config.fetch("knowledge_build", {}) || {}
      return unless config.fetch("enabled", true)

      command = command_for(site, config)
      output = File.join(site.dest, config.fetch("output_dir", "knowledge/v2"))
      # --no-progress: the output is captured and logged after the build, so progress lines would only
      # arrive at the end, as warnings
      args = command + ["build", "--no-progress", "--site", site.source, "--output", output]
      Jekyll.logger.info "knowledge-build:", "indexing #{site.source} into #{output}"
      stdout, stderr, status = capture(args)
      if status&.success?
        stdout.each_line { |line| Jekyll.logger.info "knowledge-build:", line.chomp }
        stderr.each_line { |line| Jekyll.logger.warn "knowledge-build:", line.chomp }
      else
        fail_or_warn(config, stdout + stderr)
      end
    end

    def command_for(site, config)
      override = ENV.fetch("KNOWLEDGE_BUILD_COMMAND", "").strip
      words = Shellwords.split(override.empty? ? config.fetch("command", "knowledge-build").to_s : override)
      first = words.first
      if first.include?("/") && !File.absolute_path?(first)
        words[0] = File.expand_path(first, site.source)
      end
      words
    end

    def capture(args)
      Open3.capture3(*args)
    rescue Errno::ENOENT
      ["", "#{args.first} was not found. Install knowledge-build (make install) or set " \
           "knowledge_build.command in _config.yml (or KNOWLEDGE_BUILD_COMMAND).", nil]
    end

    def fail_or_warn(config, message)
      text = "knowledge-build failed:\n#{message.strip}"
      raise Jekyll::Errors::FatalException, text if config.fetch("fail_on_error", true)

      Jekyll.logger.warn "knowledge-build:", text
    end
  end
end

Jekyll::Hooks.register :site, :post_write do |site|
  KnowledgeBuild::JekyllPlugin.run(site)
end
