import { Badge, DataTable, PageTitle, Properties, Section } from "../../shared/components";
import { Link } from "../../shared/router";
import { useApp } from "../context";

/** Who the platform knows the person as, and their groups. */
export function Profile() {
  const { me } = useApp();
  return (
    <>
      <PageTitle title="Profile" lead="What the platform knows about you. Your name and email come from your organisation's identity provider." />
      <Section title="You">
        <Properties
          items={[
            ["Name", me.name],
            ["Username", me.preferred_username],
            ["Email", me.email],
            ["User ID", <code class="mono">{me.sub}</code>],
            ["Platform role", me.isSystemAdmin ? <Badge tone="info">System admin</Badge> : "User"],
            ["Session", "Renewed automatically while a page of the platform is open"],
          ]}
        />
      </Section>
      <Section title="Groups and roles">
        <DataTable
          caption="Your groups and roles"
          captionHidden
          rows={me.groups}
          rowKey={(g) => g.id}
          empty={
            <>
              You are in no group yet. <Link href="/groups">Ask to join one.</Link>
            </>
          }
          columns={[
            {
              label: "Group",
              cell: (g) => (
                <Link class="cell-main" href={`/groups/${g.id}`}>
                  {g.name}
                </Link>
              ),
            },
            { label: "Role", cell: (g) => <Badge tone={g.role === "ADMIN" ? "info" : "neutral"}>{g.role === "ADMIN" ? "Admin" : "Member"}</Badge> },
            { label: "Group ID", cell: (g) => <code class="mono">{g.id}</code> },
          ]}
        />
      </Section>
    </>
  );
}
